package status_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestFleetOf(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.MustOpen(t)
	now := storetest.Now()
	fresh := storetest.NewHost().Name("a-workstation").Memory(32 << 30).SeenAt(now.Add(-10 * time.Second)).Build()
	gone := storetest.NewHost().Name("b-mini").Memory(8 << 30).SeenAt(now.Add(-2 * time.Minute)).Build()
	for _, h := range []rm.Host{fresh, gone} {
		require.NoError(t, st.RegisterHost(ctx, store.FleetHost{Host: h, Version: "v1.4.0"}))
	}
	p := storetest.NewPolicy().Name("home").Host(fresh.ID).Autoscale("home", 4).Build()
	q := storetest.NewPolicy().Name("mini").Host(gone.ID).Autoscale("mini", 4).Build()
	for _, pol := range []rm.Policy{p, q} {
		require.NoError(t, st.InsertPolicy(ctx, pol))
	}
	for _, s := range []rm.AttemptState{rm.StateBusy, rm.StateIdle, rm.StateFinished} {
		require.NoError(t, st.RecordAttempt(ctx, storetest.NewAttempt().Policy(p.ID).Host(fresh.ID).State(s).Build()))
	}

	f, err := status.FleetOf(ctx, st, now, 0)
	require.NoError(t, err)
	require.NotNil(t, f)
	assert.Equal(t, status.DefaultStaleAfter, f.StaleAfter)
	require.Len(t, f.Hosts, 2)
	a, b := f.Hosts[0], f.Hosts[1]
	assert.Equal(t, []any{"a-workstation", uint64(32 << 30), "v1.4.0", 2, false}, []any{a.Name, a.MemoryBytes, a.Version, a.LiveAttempts, a.Stale})
	assert.Equal(t, []any{"b-mini", 0, true}, []any{b.Name, b.LiveAttempts, b.Stale}, "two minutes without a heartbeat")
	require.NotNil(t, b.SeenAt)
	assert.Equal(t, now.Add(-2*time.Minute), *b.SeenAt)

	f, err = status.FleetOf(ctx, st, now, 5*time.Minute)
	require.NoError(t, err)
	assert.False(t, f.Hosts[1].Stale, "within a longer threshold")

	s, err := status.FromJournal(ctx, st, fresh.ID, now)
	require.NoError(t, err)
	require.NotNil(t, s.Fleet, "the journal's status shows the fleet")
	assert.Len(t, s.Fleet.Hosts, 2)
}

func TestStaleAfter(t *testing.T) {
	assert.Equal(t, status.DefaultStaleAfter, status.StaleAfter(0), "the daemon's default heartbeat")
	assert.Equal(t, 30*time.Second, status.StaleAfter(10*time.Second), "three missed beats")
}
