package app_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestStatusFleetGolden(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	seen := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	this := storetest.NewHost().ID(mustHostID(t, "4b8c2d6e9f1g3h5j7k9m2n4p60")).Name("workstation").Build()
	one := status.Status{At: now, Host: this, Fleet: &status.Fleet{StaleAfter: status.DefaultStaleAfter,
		Hosts: []status.FleetHost{{ID: this.ID, Name: "workstation", MemoryBytes: 32 << 30, CPUs: 16, OS: "linux", Version: "v1.4.0", LiveAttempts: 3, SeenAt: seen(4 * time.Second)}}}}
	var b bytes.Buffer
	require.NoError(t, app.RenderStatus(&b, one, now))
	assert.NotContains(t, b.String(), "fleet", "one host: no fleet section")

	two := one
	two.Fleet = &status.Fleet{StaleAfter: one.Fleet.StaleAfter, Hosts: append(one.Fleet.Hosts,
		status.FleetHost{ID: mustHostID(t, "7m1n1b0x9f1g3h5j7k9m2n4p60"), Name: "mini", MemoryBytes: 16 << 30, CPUs: 8, OS: "darwin", Version: "v1.3.2", SeenAt: seen(3 * time.Minute), Stale: true},
		status.FleetHost{ID: mustHostID(t, "9n3wb0x09f1g3h5j7k9m2n4p60"), Name: "new-box", Stale: true})}
	b.Reset()
	require.NoError(t, app.RenderStatus(&b, two, now))
	golden(t, "status-fleet", b.String())
}

func mustHostID(t *testing.T, s string) rm.HostID {
	t.Helper()
	id, err := rm.ParseHostID(s)
	require.NoError(t, err)
	return id
}

func TestStatusShowsTheFleet(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	st := e.journal()
	now := time.Now().UTC()
	for _, h := range []store.FleetHost{
		{Host: storetest.NewHost().Name("peer-fresh").SeenAt(now).Build(), Version: "v9"},
		{Host: storetest.NewHost().Name("peer-stale").SeenAt(now.Add(-10 * time.Minute)).Build(), Version: "v8"},
	} {
		require.NoError(t, st.RegisterHost(t.Context(), h))
	}
	out := e.ok("status")
	assert.Contains(t, out, "fleet:    3 hosts, 1 stale (no heartbeat for 45s)")
	assert.Regexp(t, `peer-stale .* v8 .*stale`, out)

	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("status", "--json")), &got))
	fleet, ok := got["fleet"].(map[string]any)
	require.True(t, ok, "a fleet object: %v", got["fleet"])
	hosts := fleet["hosts"].([]any)
	require.Len(t, hosts, 3)
	stale := map[string]bool{}
	for _, h := range hosts {
		h := h.(map[string]any)
		stale[h["name"].(string)] = h["stale"].(bool)
	}
	assert.Equal(t, false, stale["peer-fresh"])
	assert.Equal(t, true, stale["peer-stale"])

	t.Run("FromDaemon", func(t *testing.T) {
		serveDaemon(t, e.dataDir, &fixedDaemon{refreshed: make(chan struct{}, 1), st: status.Status{At: now, Host: rm.Host{ID: rm.NewHostID(), Name: "box"}}})
		out := e.ok("status", "--json")
		checkSchema(t, docSchemas(t)["status"], out, false)
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		assert.Equal(t, true, got["daemon"])
		assert.Len(t, got["fleet"].(map[string]any)["hosts"], 3, "the daemon's figures, the store's fleet")
	})
}
