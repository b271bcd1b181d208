package reconcile_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleet is a supervisor over a real journal and fakes, one fake target per
// target key.
type fleet struct {
	t        *testing.T
	st       store.Store
	host     rm.Host
	launcher *fakeLauncher
	logs     *syncBuffer
	mu       sync.Mutex
	targets  map[string]*fakeTarget
	made     map[string]int
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{t: t, st: sqlitetest.MustOpen(t), host: storetest.NewHost().Build(), launcher: newFakeLauncher(),
		logs: &syncBuffer{}, targets: map[string]*fakeTarget{}, made: map[string]int{}}
	require.NoError(t, f.st.PutHost(t.Context(), f.host))
	return f
}

func (f *fleet) config() reconcile.SupervisorConfig {
	return reconcile.SupervisorConfig{
		Store: f.st, Host: f.host, Launcher: f.launcher, RefreshEvery: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Targets: func(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			ft := newFakeTarget()
			f.targets[p.Target.Key()] = ft
			f.made[p.Target.Key()]++
			return reconcile.TargetOf(ft), nil
		},
		Machine: platform.NewMachine(),
		Loop:    reconcile.LoopOptions{ActiveRequeue: 20 * time.Millisecond, RunnerListEvery: 10 * time.Millisecond, ScaleDownAfter: -1},
	}
}

func (f *fleet) target(p rm.Policy) *fakeTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.targets[p.Target.Key()]
}

func (f *fleet) policy(pb *storetest.PolicyBuilder) rm.Policy {
	f.t.Helper()
	p := pb.Host(f.host.ID).Build()
	require.NoError(f.t, f.st.InsertPolicy(f.t.Context(), p))
	return p
}

func (f *fleet) live(p rm.Policy) []rm.Attempt {
	as, err := f.st.ActiveAttempts(context.Background(), p.ID)
	require.NoError(f.t, err)
	return as
}

func (f *fleet) run(cfg reconcile.SupervisorConfig) (*reconcile.Supervisor, func()) {
	f.t.Helper()
	return runSupervisor(f.t, cfg, 10*time.Second)
}

// runSupervisor runs a supervisor until the test ends or stop is called;
// stop waits up to wait for Run to return, and fails the test if it errs.
func runSupervisor(t *testing.T, cfg reconcile.SupervisorConfig, wait time.Duration) (sup *reconcile.Supervisor, stop func()) {
	t.Helper()
	sup, err := reconcile.NewSupervisor(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(wait):
				t.Error("the supervisor did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return sup, stop
}

const wait, tick = 5 * time.Second, 5 * time.Millisecond

func TestSupervisorFollowsThePolicies(t *testing.T) {
	f := newFleet(t)
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 2).MinIdle(1))
	sup, _ := f.run(f.config())
	require.Eventually(t, func() bool { return len(f.live(home)) == 1 }, wait, tick, "min idle kept")

	// A policy added: its loop starts.
	gpu := f.policy(storetest.NewPolicy().Name("gpu").Labels("gpu").Max(1).MinIdle(1))
	sup.Refresh()
	require.Eventually(t, func() bool { return len(f.live(gpu)) == 1 && len(sup.Status().Attempts) == 2 }, wait, tick)
	st := sup.Status()
	require.Len(t, st.Policies, 2)
	assert.Equal(t, "gpu", st.Policies[0].Name)
	assert.Equal(t, 1, st.Policies[1].Live)
	assert.Len(t, st.Attempts, 2)
	for _, a := range st.Attempts {
		assert.Equal(t, map[rm.PolicyID]string{home.ID: "home", gpu.ID: "gpu"}[a.Policy], a.PolicyName, "the live loops' status names the policy")
	}

	// Edited: min idle 2 shows at the next pass.
	home.MinIdle = 2
	require.NoError(t, f.st.UpdatePolicy(t.Context(), home))
	sup.Refresh()
	require.Eventually(t, func() bool { return len(f.live(home)) == 2 }, wait, tick)

	// Paused: its runners (not yet online) go, then its loop stops and its
	// target is closed.
	gpu.Paused = true
	require.NoError(t, f.st.UpdatePolicy(t.Context(), gpu))
	sup.Refresh()
	require.Eventually(t, func() bool { return len(f.live(gpu)) == 0 }, wait, tick)
	require.Eventually(t, func() bool { return f.target(gpu).count("close") == 1 }, wait, tick)
	st = sup.Status()
	require.Len(t, st.Policies, 2)
	assert.True(t, st.Policies[0].Paused)
	assert.Zero(t, st.Policies[0].Live)

	// Resumed: a new loop, a new target.
	gpu.Paused = false
	require.NoError(t, f.st.UpdatePolicy(t.Context(), gpu))
	sup.Refresh()
	require.Eventually(t, func() bool { return len(f.live(gpu)) == 1 }, wait, tick)
	f.mu.Lock()
	assert.Equal(t, 2, f.made[gpu.Target.Key()])
	f.mu.Unlock()
}

func TestSupervisorStopAttempt(t *testing.T) {
	f := newFleet(t)
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 1).MinIdle(1))
	sup, _ := f.run(f.config())
	require.Eventually(t, func() bool { return len(f.live(home)) == 1 }, wait, tick)
	a := f.live(home)[0]
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	require.NoError(t, sup.StopAttempt(ctx, a.ID))
	got, err := f.st.Attempt(t.Context(), a.ID)
	require.NoError(t, err)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind)
	assert.Equal(t, "stopped by a user", got.Outcome.Detail)
	assert.NoError(t, sup.StopAttempt(ctx, a.ID), "an ended attempt is left as is")
}

func TestSupervisorDrain(t *testing.T) {
	f := newFleet(t)
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 2).MinIdle(2))
	cfg := f.config()
	cfg.Drain = true
	sup, stop := f.run(cfg)
	require.Eventually(t, func() bool {
		live := f.live(home)
		return len(live) == 2 && live[0].State == rm.StateStarting && live[1].State == rm.StateStarting
	}, wait, tick, "both registered and launched")
	live := f.live(home)
	busy, idle := live[0], live[1]
	tg := f.target(home)
	tg.set(busy.RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	tg.set(idle.RunnerName, func(r *rm.Runner) { r.Online = true })
	var ps status.Policy
	require.Eventually(t, func() bool {
		ps = sup.Status().Policies[0]
		return ps.Busy == 1 && ps.Idle == 1
	}, wait, tick, "status %+v\n%s", &ps, f.logs)

	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	require.Eventually(t, f.launcher.proc(idle.ID).wasStopped, wait, tick, "the idle runner is removed")
	select {
	case <-stopped:
		t.Fatal("the drain did not wait for the busy runner")
	case <-time.After(100 * time.Millisecond):
	}
	assert.False(t, f.launcher.proc(busy.ID).wasStopped())
	f.launcher.proc(busy.ID).exit(0) // its job done
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("the drain did not end")
	}
	assert.Empty(t, f.live(home))
	assert.Equal(t, 2, f.launcher.launches(), "nothing launched while draining")
}

func TestSupervisorRunOnce(t *testing.T) {
	f := newFleet(t)
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 2).MinIdle(1))
	f.policy(storetest.NewPolicy().Name("off").Labels("off").Paused())
	sup, err := reconcile.NewSupervisor(f.config())
	require.NoError(t, err)
	require.NoError(t, sup.RunOnce(t.Context()))
	live := f.live(home)
	require.Len(t, live, 1, "min idle, demand unknown")
	assert.Equal(t, rm.StateStarting, live[0].State)
	assert.Equal(t, 1, f.target(home).count("close"))
	f.mu.Lock()
	assert.Len(t, f.made, 1, "no loop for a paused policy with nothing live")
	f.mu.Unlock()
}

// TestSupervisorNudgesOnlyChangedLoops: a refresh that finds a loop's
// policies as they were leaves it to its own schedule (an idle loop passes
// once a minute); an edit nudges that loop alone, at once.
func TestSupervisorNudgesOnlyChangedLoops(t *testing.T) {
	f := newFleet(t)
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 2))
	gpu := f.policy(storetest.NewPolicy().Name("gpu").Labels("gpu").Max(1))
	var mu sync.Mutex
	passes := map[string]int{}
	count := func(p rm.Policy) int {
		mu.Lock()
		defer mu.Unlock()
		return passes[p.Target.Key()]
	}
	cfg := f.config() // re-reads the policies every 20 ms
	cfg.OnPass = func(key string, _ time.Duration, _ error) {
		mu.Lock()
		passes[key]++
		mu.Unlock()
	}
	sup, _ := f.run(cfg)
	require.Eventually(t, func() bool { return count(home) > 0 && count(gpu) > 0 }, wait, tick, "each loop's first pass")

	time.Sleep(500 * time.Millisecond) // 25 refreshes
	h, g := count(home), count(gpu)
	assert.LessOrEqual(t, h, 2, "an idle loop is not nudged by refreshes that change nothing")
	assert.LessOrEqual(t, g, 2)

	home.MinIdle = 1
	require.NoError(t, f.st.UpdatePolicy(t.Context(), home))
	sup.Refresh()
	require.Eventually(t, func() bool { return len(f.live(home)) == 1 }, time.Second, tick, "an edit shows at once")
	assert.Equal(t, g, count(gpu), "the other loop is left alone")
}

// TestLoopsSharingAScopeKeepEachOthersRunners is the regression test of
// liveElsewhere: a repository's runner list holds the registrations of
// every target of the host, so each loop sees the other's runners among
// those with the host's prefix. Neither may take them for leftovers.
func TestLoopsSharingAScopeKeepEachOthersRunners(t *testing.T) {
	f := newFleet(t)
	a := f.policy(storetest.NewPolicy().Name("a").Repository("acme/repo").Labels("a").Max(1).MinIdle(1))
	b := f.policy(storetest.NewPolicy().Name("b").Repository("acme/repo").Labels("b").Max(1).MinIdle(1))
	require.NotEqual(t, a.Target.Key(), b.Target.Key())
	scope := newFakeTarget() // one repository: one runner list for both targets
	var mu sync.Mutex
	passes := map[string]int{}
	cfg := f.config() // runner lists every 10 ms, passes every 20 ms
	cfg.Targets = func(context.Context, rm.Policy) (reconcile.Target, error) { return reconcile.TargetOf(scope), nil }
	cfg.OnPass = func(key string, _ time.Duration, _ error) {
		mu.Lock()
		passes[key]++
		mu.Unlock()
	}
	f.run(cfg)
	require.Eventually(t, func() bool { return len(f.live(a)) == 1 && len(f.live(b)) == 1 }, wait, tick)
	names := []string{f.live(a)[0].RunnerName, f.live(b)[0].RunnerName}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return passes[a.Target.Key()] >= 20 && passes[b.Target.Key()] >= 20
	}, wait, tick, "each loop lists the scope's runners many times")

	assert.Zero(t, scope.count("remove"), "no loop removed a registration")
	for _, n := range names {
		assert.True(t, scope.has(n), "runner %s is still registered", n)
	}
	assert.Equal(t, 2, f.launcher.launches(), "no runner was lost and replaced")
	assert.NotContains(t, f.logs.String(), "removed a registration no live attempt owns")
}
