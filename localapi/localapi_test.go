package localapi_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// daemon is a stand-in supervisor: a fixed status and a record of calls.
type daemon struct {
	status    status.Status
	mu        sync.Mutex
	stopped   []rm.AttemptID
	refreshes atomic.Int32
}

var _ localapi.Daemon = (*daemon)(nil)

func (d *daemon) Status() status.Status { return d.status }

func (d *daemon) StopAttempt(_ context.Context, id rm.AttemptID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.status.Attempts {
		if a.ID == id {
			d.stopped = append(d.stopped, id)
			return nil
		}
	}
	return fmt.Errorf("attempt %s: %w", id, store.ErrNotFound)
}

func (d *daemon) Refresh() { d.refreshes.Add(1) }

func serve(t *testing.T, d localapi.Daemon) (dir string) {
	t.Helper()
	dir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l, err := localapi.Listen(dir)
	require.NoError(t, err)
	go func() { done <- localapi.ServeListener(ctx, l, d, nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		_, err := os.Stat(localapi.SocketPath(dir))
		assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed on exit")
	})
	return dir
}

func sampleStatus() status.Status {
	host := rm.Host{ID: rm.NewHostID(), Name: "box", MemoryBytes: 8 << 30, CPUs: 4, OS: "linux", Arch: "amd64"}
	pid := rm.NewPolicyID()
	return status.Status{
		At:     time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Host:   host,
		Memory: status.Memory{TotalBytes: 8 << 30, AvailableBytes: 5 << 30, ReserveBytes: 2 << 30},
		Policies: []status.Policy{{
			ID: pid, Name: "home", Target: "repo:octo/app group=Default scale-set=home", Mode: "scale-set",
			Live: 2, Busy: 1, Idle: 1, Max: 4, Demand: 3, Admitted: 3, LastRefusal: "memory",
		}},
		Attempts: []status.Attempt{{
			ID: rm.NewAttemptID(), Policy: pid, RunnerName: "rm-abc", State: rm.StateBusy, Job: &rm.Job{ID: "42", Number: 42, RunID: 7, Workflow: "ci", Name: "build"},
			CreatedAt: time.Date(2025, 3, 1, 11, 59, 0, 0, time.UTC), RSSBytes: 1 << 30, PeakRSSBytes: 2 << 30, CPUMillicores: 1500,
		}},
		Budget:   rm.Budget{Limit: 5000, Remaining: 4990, Used: 10, Reset: time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC)},
		Refusals: map[string]int{"memory": 2},
	}
}

func TestStatus(t *testing.T) {
	d := &daemon{status: sampleStatus()}
	dir := serve(t, d)
	got, err := localapi.NewClient(dir).Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, d.status, got)
}

func TestSocketMode(t *testing.T) {
	dir := serve(t, &daemon{})
	fi, err := os.Stat(localapi.SocketPath(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestStopAttempt(t *testing.T) {
	d := &daemon{status: sampleStatus()}
	c := localapi.NewClient(serve(t, d))
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		id := d.status.Attempts[0].ID
		require.NoError(t, c.StopAttempt(ctx, id))
		d.mu.Lock()
		defer d.mu.Unlock()
		assert.Equal(t, []rm.AttemptID{id}, d.stopped)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		err := c.StopAttempt(ctx, rm.NewAttemptID())
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestRefresh(t *testing.T) {
	d := &daemon{}
	c := localapi.NewClient(serve(t, d))
	require.NoError(t, c.Refresh(context.Background()))
	require.NoError(t, c.Refresh(context.Background()))
	assert.Equal(t, int32(2), d.refreshes.Load())
}

func TestNotRunning(t *testing.T) {
	dir := t.TempDir()
	c := localapi.NewClient(dir)
	_, err := c.Status(context.Background())
	require.ErrorIs(t, err, localapi.ErrNotRunning)
	assert.Contains(t, err.Error(), "runner-manager run")

	// A socket file nobody listens on (a daemon killed with SIGKILL).
	l, err := net.Listen("unix", localapi.SocketPath(dir))
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	_, err = c.Status(context.Background())
	require.ErrorIs(t, err, localapi.ErrNotRunning)
}

func TestListen(t *testing.T) {
	t.Run("stale socket replaced", func(t *testing.T) {
		dir := t.TempDir()
		l, err := net.Listen("unix", localapi.SocketPath(dir))
		require.NoError(t, err)
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		require.NoError(t, l.Close())
		l2, err := localapi.Listen(dir)
		require.NoError(t, err)
		require.NoError(t, l2.Close())
	})
	t.Run("ErrAlreadyRunning", func(t *testing.T) {
		dir := serve(t, &daemon{})
		_, err := localapi.Listen(dir)
		require.ErrorIs(t, err, localapi.ErrAlreadyRunning)
	})
	t.Run("path too long", func(t *testing.T) {
		dir := t.TempDir() + "/" + string(make([]byte, 0)) + "a-very-long-directory-name-that-goes-on-and-on-and-on-and-on-and-on-and-on-and-on"
		require.NoError(t, os.MkdirAll(dir, 0o700))
		_, err := localapi.Listen(dir)
		require.ErrorIs(t, err, rm.ErrInvalid)
		assert.Contains(t, err.Error(), "--data-dir")
	})
}
