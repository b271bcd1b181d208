package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// Two supervisors of one host over one journal (two data directories
// pointing at it): the second refuses, naming the first's pid, and starts
// once the first stopped.
func TestSupervisorHoldsTheHostLease(t *testing.T) {
	f := newFleet(t)
	f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 2).MinIdle(1))
	_, stop := f.run(f.config())
	require.Eventually(t, func() bool {
		_, err := f.st.HostLease(context.Background(), f.host.ID)
		return err == nil
	}, wait, tick, "the first supervisor holds the lease")

	second, err := reconcile.NewSupervisor(f.config())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = second.Run(ctx)
	require.ErrorIs(t, err, store.ErrConflict, "a second daemon of the host refuses to start")
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d on ", os.Getpid()), "the error names the holder")
	assert.Error(t, second.RunOnce(ctx), "run --once refuses too")

	stop()
	_, err = f.st.HostLease(context.Background(), f.host.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "a stopped supervisor releases the lease")
	_, stop = f.run(f.config())
	require.Eventually(t, func() bool {
		_, err := f.st.HostLease(context.Background(), f.host.ID)
		return err == nil
	}, wait, tick, "the next supervisor starts")
	stop()
}

// A lease left by a daemon killed -9 on this machine is taken over at once;
// one of another machine is respected until it expires.
func TestSupervisorTakesOverADeadHoldersLease(t *testing.T) {
	self, err := platform.Identify()
	require.NoError(t, err)
	dead := deadProcess(t)
	for _, tt := range []struct {
		name     string
		hostname string
		pid      int
		start    uint64
		bootID   string
		refused  bool
	}{
		{"KilledHere", self.Hostname, dead, 12345, self.BootID, false},
		{"EarlierBoot", self.Hostname, self.PID, self.Start, "an-earlier-boot", false},
		{"AnotherMachine", "another-box", dead, 12345, "its-boot", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t)
			now := time.Now()
			_, err := f.st.AcquireHostLease(t.Context(), store.HostLease{Host: f.host.ID, Holder: "old", PID: tt.pid, ProcessStart: tt.start,
				Hostname: tt.hostname, BootID: tt.bootID, RenewedAt: now, ExpiresAt: now.Add(time.Minute)}, "")
			require.NoError(t, err)
			sup, err := reconcile.NewSupervisor(f.config())
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- sup.Run(ctx) }()
			if tt.refused {
				select {
				case err := <-done:
					require.ErrorIs(t, err, store.ErrConflict)
					assert.Contains(t, err.Error(), "on another-box")
				case <-time.After(10 * time.Second):
					t.Fatal("a live lease of another machine was taken")
				}
				cancel()
				return
			}
			require.Eventually(t, func() bool {
				l, err := f.st.HostLease(context.Background(), f.host.ID)
				return err == nil && l.PID == os.Getpid() && l.Holder != "old"
			}, wait, tick, "the dead holder's lease is taken over")
			cancel()
			require.NoError(t, <-done)
		})
	}
}

// deadProcess returns the pid of a process that ran and was reaped.
func deadProcess(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}
