package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// passes runs a pass every step for d.
func (e *env) passes(d, step time.Duration) {
	e.t.Helper()
	for range int(d / step) {
		e.clock.Advance(step)
		e.pass()
	}
}

func TestLookupModeObservesEachRunner(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.RunnerListEvery = 30 * time.Second
		c.ZombieGrace = time.Minute
	})
	e.target.cannotList = true
	a, p := launchOne(t, e)
	assert.Zero(t, e.target.count("lookup"), "not right after its launch")
	e.clock.Advance(reconcile.DefaultBootEstimate - time.Second)
	e.pass()
	assert.Equal(t, rm.StateStarting, e.attempt(a.ID).State, "still booting")
	assert.Zero(t, e.target.count("lookup"))

	e.clock.Advance(time.Second)
	e.pass()
	assert.Equal(t, rm.StateIdle, e.attempt(a.ID).State, "its boot is over, its registration exists and its process runs")
	assert.Equal(t, 1, e.target.count("lookup"))
	e.passes(25*time.Second, 5*time.Second)
	assert.Equal(t, 1, e.target.count("lookup"), "at most one lookup per RunnerListEvery")
	e.passes(5*time.Second, 5*time.Second)
	assert.Equal(t, 2, e.target.count("lookup"))
	assert.Equal(t, 1, e.target.count("list"), "a target that cannot list is not asked again")
	assert.False(t, p.wasStopped())
}

func TestLookupModeNeverStopsARunnerRunningAJob(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.RunnerListEvery = time.Second
		c.ZombieGrace = 10 * time.Second
	})
	e.target.cannotList = true
	a, p := launchOne(t, e)
	e.demand(1, started(a.RunnerName, 5))
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
	e.target.drop(a.RunnerName) // whatever the service says of it
	e.passes(10*e.cfg.ZombieGrace, time.Second)
	assert.False(t, p.wasStopped(), "a runner running a job is never a zombie")
	assert.True(t, e.attempt(a.ID).Live())

	p.exit(0)
	e.pass()
	got := e.attempt(a.ID)
	assert.Equal(t, rm.CompletedJob, got.Outcome.Kind, got.Outcome.String())
}

func TestLookupModeZombie(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.RunnerListEvery = 30 * time.Second
		c.ZombieGrace = time.Minute
	})
	e.target.cannotList = true
	a, p := launchOne(t, e)
	e.clock.Advance(30 * time.Second)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(a.ID).State)

	e.target.drop(a.RunnerName) // GitHub dropped it; the runner stays, deaf
	e.clock.Advance(30 * time.Second)
	e.pass() // first word: gone
	e.passes(59*time.Second, time.Second)
	assert.False(t, p.wasStopped(), "within the grace")
	e.passes(time.Second, time.Second) // the second word, a grace later
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
	e.pass()
	got := e.attempt(a.ID)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind, got.Outcome.String())
	assert.Contains(t, got.Outcome.Detail, "removed idle by GitHub")
}

func TestAListThatLacksARunnerIsConfirmed(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), func(c *reconcile.Config) {
		c.RunnerListEvery = time.Millisecond
		c.ZombieGrace = 10 * time.Second
	})
	e.demand(2)
	e.pass()
	live := e.live()
	require.Len(t, live, 2)
	idle, busy := live[0], live[1]
	e.target.set(idle.RunnerName, func(r *rm.Runner) { r.Online = true })
	e.target.set(busy.RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	e.clock.Advance(time.Second)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(idle.ID).State)
	require.Equal(t, rm.StateBusy, e.attempt(busy.ID).State)

	// The list lacks both; the idle one is still registered, the busy
	// one's registration is gone while its job runs.
	e.target.unlisted = map[string]bool{idle.RunnerName: true}
	e.target.drop(busy.RunnerName)
	e.passes(3*e.cfg.ZombieGrace, time.Second)
	assert.False(t, e.launcher.proc(idle.ID).wasStopped(), "missing from a list, but GitHub has its registration")
	assert.False(t, e.launcher.proc(busy.ID).wasStopped(), "a runner running a job is never a zombie")
	assert.Positive(t, e.target.count("lookup"), "a runner the list lacks is looked up")
	assert.Len(t, e.live(), 2)
}

func TestRepairFindsTheRegistrationACrashLeft(t *testing.T) {
	for _, cannotList := range []bool{true, false} {
		name := "Lists"
		if cannotList {
			name = "CannotList"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
			e.target.cannotList = cannotList
			// The JIT request answered; the manager died before writing the id.
			left := e.record(storetest.NewAttempt().Policy(e.policy.ID).Host(e.host.ID).State(rm.StateRegistering).
				CreatedAt(e.clock.Now().Add(-time.Minute)).Build())
			e.target.add(rm.Runner{ID: 900, Name: left.RunnerName})
			e.pass()
			got := e.attempt(left.ID)
			assert.Equal(t, rm.LaunchFailed, got.Outcome.Reason, got.Outcome.String())
			assert.Equal(t, int64(900), got.GitHubRunnerID)
			assert.False(t, e.target.has(left.RunnerName), "its registration is removed")
		})
	}
}

func TestGitHubFailureFiresOneRegistration(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4), func(c *reconcile.Config) {
		c.MaxLaunchesPerPass = 4
		c.MaxFailedLaunchesPerMinute = 4 // fewer than the failures to come
	})
	e.target.setErr(errors.New("register runner: GitHub answered 500"), nil, nil)
	e.demand(4)
	_, err := e.loop.Reconcile(e.ctx)
	require.Error(t, err)
	assert.Equal(t, 1, e.target.count("jit"), "the pass's other launches do not fire")
	for i := range 5 {
		e.clock.Advance(time.Second << i) // the backoff's ceiling: all within the budget's minute
		_, err := e.loop.Reconcile(e.ctx)
		require.Error(t, err)
		assert.Equal(t, i+2, e.target.count("jit"), "one registration a pass while GitHub fails")
	}
	ended := e.ended()
	require.Len(t, ended, 6)
	for _, a := range ended {
		assert.Equal(t, rm.GitHubUnavailable, a.Outcome.Reason, a.Outcome.String())
	}

	e.target.setErr(nil, nil, nil)
	e.clock.Advance(time.Minute)
	e.pass()
	assert.Len(t, e.live(), 4, "GitHub's failures are not runner failures: launches are not paused")
	assert.NotContains(t, e.logs.String(), "launches paused")
}

func TestLaunchesFireOnceTheFirstRegisters(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 3), nil)
	var mu sync.Mutex
	var registeredBefore []int
	e.target.onJIT = func(string) {
		n := 0
		for _, a := range e.live() {
			if a.GitHubRunnerID != 0 {
				n++
			}
		}
		mu.Lock()
		registeredBefore = append(registeredBefore, n)
		mu.Unlock()
	}
	e.demand(3)
	e.pass()
	require.Len(t, e.live(), 3)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, registeredBefore, 3)
	assert.Zero(t, registeredBefore[0])
	assert.Positive(t, registeredBefore[1], "the second registration waits for the first")
	assert.Positive(t, registeredBefore[2])
}

// TestGitHubBackoff plays a 20 s storm of failed registrations in virtual
// time through the loop's own driver: one registration per pass, backing
// off from BackoffBase doubling; no pause of launches; the first success
// resets the backoff.
func TestGitHubBackoff(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4), nil)
	synctest.Test(t, func(t *testing.T) {
		cfg := e.cfg
		cfg.Now = time.Now
		cfg.BackoffBase, cfg.BackoffMax = time.Second, 2*time.Minute
		cfg.MaxFailedLaunchesPerMinute = 2
		cfg.MaxLaunchesPerPass = 4
		start := time.Now()
		var mu sync.Mutex
		var calls []time.Duration
		e.target.onJIT = func(string) {
			mu.Lock()
			calls = append(calls, time.Since(start))
			mu.Unlock()
		}
		e.target.setErr(errors.New("register runner: GitHub answered 500"), nil, nil)
		loop, stop := runLoop(t, cfg)
		loop.ReportDemand(rm.Demand{Wanted: 2, At: time.Now()})
		time.Sleep(20 * time.Second)
		e.target.setErr(nil, nil, nil)
		time.Sleep(40 * time.Second)
		synctest.Wait()

		mu.Lock()
		storm := append([]time.Duration(nil), calls...)
		mu.Unlock()
		var failed []time.Duration
		for _, c := range storm {
			if c < 20*time.Second {
				failed = append(failed, c)
			}
		}
		require.GreaterOrEqual(t, len(failed), 4, "calls %v", storm)
		ceil := cfg.BackoffBase
		for i := 1; i < len(failed); i++ {
			gap := failed[i] - failed[i-1]
			assert.GreaterOrEqual(t, gap, ceil/2, "wait %d of %v", i, failed)
			assert.LessOrEqual(t, gap, ceil, "wait %d of %v", i, failed)
			// Doubling, but never beyond rm.MaxOutageWait: GitHub's
			// return is noticed within seconds.
			ceil = min(ceil*2, rm.MaxOutageWait)
		}
		require.Greater(t, len(storm), len(failed))
		resumed := storm[len(failed)]
		assert.LessOrEqual(t, resumed-failed[len(failed)-1], ceil, "the first try after the storm is the next backoff's")
		assert.Len(t, storm, len(failed)+2, "then both wanted runners launch at once")
		as, err := e.st.ActiveAttempts(context.Background(), e.policy.ID)
		require.NoError(t, err)
		assert.Len(t, as, 2)
		assert.NotContains(t, e.logs.String(), "launches paused")

		// The success reset the backoff: a new failure waits from the base.
		e.target.setErr(errors.New("register runner: GitHub answered 502"), nil, nil)
		loop.ReportDemand(rm.Demand{Wanted: 4, At: time.Now()})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		after := append([]time.Duration(nil), calls[len(storm):]...)
		mu.Unlock()
		require.GreaterOrEqual(t, len(after), 2, "calls %v", after)
		assert.LessOrEqual(t, after[1]-after[0], cfg.BackoffBase, "from the base again: %v", after)
		stop()
	})
}

// TestAnExitedRunnerWaitingForGitHubsWordHoldsNoSlot: a runner that exited
// with no job known waits up to JobWordGrace for GitHub's word on its job,
// but neither admission, nor the capacity told to GitHub, nor the demand
// keeps its slot meanwhile.
func TestAnExitedRunnerWaitingForGitHubsWordHoldsNoSlot(t *testing.T) {
	adm := &reconcile.Admission{Memory: fakeMemory{4 << 30}, Reserve: 512 << 20}
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4).MemoryEstimate(1536<<20), func(c *reconcile.Config) {
		c.Admission = adm
		c.JobWordGrace = 30 * time.Second
	})
	e.demand(2)
	e.pass()
	live := e.live()
	require.Len(t, live, 2, "two of 1.5 GiB fit in 3.5 GiB")
	e.launcher.proc(live[0].ID).exit(0)
	for range 3 {
		e.pass()
		assert.Equal(t, 3, e.launcher.launches(), "its slot is refilled at once, and once")
		assert.Equal(t, 2, e.loop.Capacity(), "the capacity told to GitHub counts it out")
		assert.Equal(t, uint64(3<<30), adm.Status().CommittedBytes, "admission counts it out")
		assert.True(t, e.attempt(live[0].ID).Live(), "it waits for GitHub's word")
		e.clock.Advance(5 * time.Second)
	}
	e.clock.Advance(30 * time.Second)
	e.pass()
	assert.Equal(t, rm.ExitedIdleWithoutWork, e.attempt(live[0].ID).Outcome.Kind)
	assert.Equal(t, 3, e.launcher.launches())
}

// TestTheWatchsRecoveryEndsTheBackoff: after a long outage the loop's
// backoff has grown to a minute; the demand watch's first report after
// failing says GitHub answers again, and the registration waiting for
// the backoff goes at once.
func TestTheWatchsRecoveryEndsTheBackoff(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	synctest.Test(t, func(t *testing.T) {
		cfg := e.cfg
		cfg.Now = time.Now
		cfg.BackoffBase, cfg.BackoffMax = time.Second, 2*time.Minute
		start := time.Now()
		var mu sync.Mutex
		var jits []time.Duration
		var recovered time.Duration
		e.target.onJIT = func(string) {
			mu.Lock()
			jits = append(jits, time.Since(start))
			mu.Unlock()
		}
		outage := errors.New("GitHub answered 503")
		e.target.setErr(outage, nil, nil)
		e.target.watch = func(ctx context.Context, _ func() int, report func(rm.Demand)) error {
			if time.Since(start) < 2*time.Minute {
				time.Sleep(time.Second)
				return outage
			}
			e.target.setErr(nil, nil, nil)
			mu.Lock()
			recovered = time.Since(start)
			mu.Unlock()
			report(rm.Demand{Wanted: 1, At: time.Now()})
			<-ctx.Done()
			return nil
		}
		loop, err := reconcile.NewLoop(cfg)
		require.NoError(t, err)
		loop.ReportDemand(rm.Demand{Wanted: 1, At: time.Now()})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = loop.Run(ctx)
		}()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		cancel()
		<-done
		loop.Close()

		mu.Lock()
		defer mu.Unlock()
		require.NotZero(t, recovered, "the watch recovered")
		require.NotEmpty(t, jits)
		last := jits[len(jits)-1]
		assert.GreaterOrEqual(t, last, recovered)
		assert.Less(t, last-recovered, 100*time.Millisecond, "registered at the watch's recovery, not at the backoff's end: %v, recovered at %v", jits, recovered)
		// The one runner launched never got online: the stop without
		// drain removed it, and it is no failure.
		as, err := e.st.Attempts(context.Background(), store.AttemptFilter{Policy: e.policy.ID, States: []rm.AttemptState{rm.StateFinished}})
		require.NoError(t, err)
		require.Len(t, as, 1, "one launch, after the failed registrations")
		assert.Equal(t, rm.ExitedIdleWithoutWork, as[0].Outcome.Kind, "%s", as[0].Outcome)
	})
}
