package tui_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/status"
)

// fakeDaemon stands in for the supervisor behind the real socket API.
type fakeDaemon struct {
	status    status.Status
	mu        sync.Mutex
	stopped   []rm.AttemptID
	refreshes int
}

func (d *fakeDaemon) Status() status.Status { return d.status }

func (d *fakeDaemon) StopAttempt(_ context.Context, id rm.AttemptID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = append(d.stopped, id)
	return nil
}

func (d *fakeDaemon) Refresh() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refreshes++
}

// shortDir is a data directory short enough for a unix socket path.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "rm")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestDaemonSource runs the TUI's source against the daemon's real API on a
// unix socket, then without it.
func TestDaemonSource(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	dir := shortDir(t)
	src := tui.DaemonSource(j.store, dir)

	_, err := src.Status(ctx)
	require.ErrorIs(t, err, tui.ErrPartial)
	require.ErrorContains(t, err, "runner-manager run", "no daemon yet: the journal's view, and how to start one")
	require.ErrorContains(t, src.StopAttempt(ctx, j.busy.ID), "not running")

	d := &fakeDaemon{status: liveStatus(j)}
	l, err := localapi.Listen(dir)
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- localapi.ServeListener(sctx, l, d, nil) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	st, err := src.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(16*gib), st.Memory.TotalBytes, "the daemon's figures")
	assert.Len(t, st.Policies, 2, "with the journal's policies")

	require.NoError(t, src.StopAttempt(ctx, j.busy.ID))
	require.NoError(t, src.SetMax(ctx, j.home.ID, 6))
	d.mu.Lock()
	defer d.mu.Unlock()
	assert.Equal(t, []rm.AttemptID{j.busy.ID}, d.stopped)
	assert.Equal(t, 1, d.refreshes, "the daemon is told of the edit")
}
