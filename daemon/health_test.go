package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
)

// goneStore is a journal whose reads of hosts fail while gone is set: a
// database that went away under a running daemon.
type goneStore struct {
	store.Store
	gone atomic.Bool
}

func (s *goneStore) Host(ctx context.Context, id rm.HostID) (rm.Host, error) {
	if s.gone.Load() {
		return rm.Host{}, errors.New("database is unreachable")
	}
	return s.Store.Host(ctx, id)
}

// /healthz on the metrics address: 200 "ok" while the daemon runs and its
// journal answers; 503 "unavailable" with the reason while the journal is
// gone, and "ok" again once it is back; 503 once the daemon has stopped.
func TestHealthz(t *testing.T) {
	w := newWorld(t)
	st := &goneStore{Store: sqlitetest.MustOpen(t)}
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, Store: st, GitHub: w.github(), MetricsAddr: "127.0.0.1:0",
		Version: "v-test", Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	assert.Equal(t, "unavailable", d.Health(t.Context()).Status, "not running yet")

	stop := start(t, d)
	var url string
	require.Eventually(t, func() bool { url = d.Addrs().Metrics; return url != "" }, 20*time.Second, 10*time.Millisecond)
	url = strings.TrimSuffix(url, "/metrics") + "/healthz"
	probe := func() (int, daemon.Health) {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var h daemon.Health
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
		return resp.StatusCode, h
	}

	code, h := probe()
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", h.Status)
	assert.Empty(t, h.Error)
	assert.Equal(t, "v-test", h.Version)
	assert.NotZero(t, h.PID)
	assert.False(t, h.Since.IsZero())

	st.gone.Store(true)
	code, h = probe()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "unavailable", h.Status)
	assert.Equal(t, "journal: database is unreachable", h.Error)

	st.gone.Store(false)
	code, h = probe()
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", h.Status)

	require.NoError(t, stop())
	h = d.Health(t.Context())
	assert.Equal(t, "unavailable", h.Status)
	assert.Equal(t, "the daemon is not running", h.Error)
}
