package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// termProc exits 143 when stopped, as a listener killed by SIGTERM does.
type termProc struct{ *fakeProc }

func (p termProc) Stop(ctx context.Context, grace time.Duration) error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.exit(143)
	return nil
}

// termLauncher starts termProcs.
type termLauncher struct{ *fakeLauncher }

func (l termLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	p, err := l.fakeLauncher.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	return termProc{p.(*fakeProc)}, nil
}

// online brings every live attempt's runner online at GitHub and runs a
// pass that sees it.
func (e *env) online() {
	e.t.Helper()
	for _, a := range e.live() {
		e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	}
	e.clock.Advance(time.Second)
	e.pass()
	for _, a := range e.live() {
		require.Equal(e.t, rm.StateIdle, a.State, "seen online")
	}
}

// TestScaleDownIsNotAFailure: runners the manager scales down exit 143 at
// its SIGTERM; they exited idle, their roots are not kept as failed ones,
// and the launches that follow are not paused.
func TestScaleDownIsNotAFailure(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 5), func(c *reconcile.Config) {
		c.RunnerListEvery = time.Millisecond
	})
	e.loop.Close()
	e.cfg.Launcher = termLauncher{e.launcher}
	loop, err := reconcile.NewLoop(e.cfg)
	require.NoError(t, err)
	e.loop = loop
	t.Cleanup(loop.Close)

	e.demand(5)
	e.pass()
	e.pass()
	require.Len(t, e.live(), 5)
	e.online()

	e.demand(0)
	e.clock.Advance(5 * time.Second)
	e.pass()
	for _, a := range e.live() {
		p := e.launcher.proc(a.ID)
		require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
		<-p.Done()
	}
	e.pass()
	require.Empty(t, e.live())
	ended := e.ended()
	require.Len(t, ended, 5)
	for _, a := range ended {
		assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, "%s", a.Outcome)
		assert.Contains(t, a.Outcome.Detail, "scaled down")
		require.NotNil(t, a.ExitCode)
		assert.Equal(t, 143, *a.ExitCode, "the code is recorded")
		failed, ok := e.launcher.cleanup(a.ID)
		assert.True(t, ok, "its root is removed")
		assert.False(t, failed, "not kept with the failed ones")
	}
	assert.NotContains(t, e.logs.String(), "attempt failed")

	e.demand(4)
	e.clock.Advance(time.Second)
	e.pass()
	assert.Len(t, e.live(), 4, "launches are not paused")
	assert.NotContains(t, e.logs.String(), "launches paused")
}

// TestLaunchCapCountsUnconcluded: runners that need seconds to exit 1
// cannot take a policy past MaxFailedLaunchesPerMinute, however many
// launches a pass could make before the first failure is concluded; the
// pause is logged once when it starts and once when it ends.
func TestLaunchCapCountsUnconcluded(t *testing.T) {
	t.Run("HealthyRampUp", func(t *testing.T) {
		// Before any failure nothing is capped but max: a policy that
		// has never failed starts all its jobs' runners at once.
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 10), nil)
		e.demand(10)
		for range 4 {
			e.pass()
			e.clock.Advance(250 * time.Millisecond)
		}
		assert.Len(t, e.live(), 10)
	})
	t.Run("FailingRunners", func(t *testing.T) {
		// Runners that take seconds to exit 1: while the first failures
		// come in, the launches not yet proven count, so the minute's
		// launches stop at exactly the cap.
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4), nil)
		e.demand(10)
		e.pass()
		for range 20 {
			live := e.live()
			if len(live) == 0 {
				break
			}
			e.launcher.proc(live[0].ID).exit(1)
			e.clock.Advance(time.Second)
			e.pass()
		}
		for range 10 {
			e.clock.Advance(time.Second)
			e.pass()
		}
		assert.Equal(t, reconcile.DefaultMaxFailedLaunchesPerMinute, e.launcher.launches(), "paused at the cap")
		assert.Equal(t, 1, strings.Count(e.logs.String(), "launches paused: too many failures"), "logged when the pause starts")

		e.clock.Advance(time.Minute)
		e.pass()
		assert.Greater(t, e.launcher.launches(), reconcile.DefaultMaxFailedLaunchesPerMinute, "launching again after the window")
		assert.Equal(t, 1, strings.Count(e.logs.String(), "launches resume"), "logged when the pause ends")
		e.pass()
		assert.Equal(t, 1, strings.Count(e.logs.String(), "launches paused: too many failures"))
	})
}

// TestJobWordAfterExit: an exit with no job known waits for the demand
// source's next figure, not for a fixed grace: a figure taken after the
// exit carries GitHub's word, whichever it is.
func TestJobWordAfterExit(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
		a, p := launchOne(t, e)
		p.exit(0)
		e.pass()
		e.demand(0) // taken at the exit: it may not know yet
		e.pass()
		require.True(t, e.attempt(a.ID).Live(), "a figure from before the exit is not GitHub's word on it")
		e.clock.Advance(time.Second)
		e.demand(0)
		e.pass()
		got := e.attempt(a.ID)
		require.False(t, got.Live(), "concluded at the first figure after the exit, long before JobWordGrace")
		assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind)
	})
	t.Run("Job", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
		a, p := launchOne(t, e)
		p.exit(0)
		e.pass()
		e.clock.Advance(reconcile.DefaultJobWordGrace - time.Second)
		e.demand(0, started(a.RunnerName, 3), completed(a.RunnerName, 3))
		e.pass()
		got := e.attempt(a.ID)
		assert.Equal(t, rm.CompletedJob, got.Outcome.Kind, "%s", got.Outcome)
		assert.Equal(t, jobKey(3), got.Job.ID)
	})
	t.Run("SilentSource", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
		a, p := launchOne(t, e)
		p.exit(0)
		res := e.pass()
		assert.LessOrEqual(t, res.RequeueAfter, reconcile.DefaultJobWordGrace, "a pass comes at the cap")
		e.clock.Advance(reconcile.DefaultJobWordGrace)
		e.pass()
		assert.Equal(t, rm.ExitedIdleWithoutWork, e.attempt(a.ID).Outcome.Kind)
	})
}

// TestLateWordCorrectsLost: a runner that ended while the manager was down
// is concluded lost when GitHub has no trace of it within the grace; the
// word that it ran a job, coming later (a demand source that was failing),
// makes it completed_job with its job.
func TestLateWordCorrectsLost(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	id := rm.NewAttemptID()
	now := e.clock.Now()
	a := rm.Attempt{ID: id, Policy: e.policy.ID, State: rm.StatePending, RunnerName: rm.RunnerName(e.host.ID, id), CreatedAt: now}
	a, _ = a.MoveTo(rm.StateRegistering, now)
	a.GitHubRunnerID = 555
	a, _ = a.MoveTo(rm.StateStarting, now)
	a.PID, a.ProcessStart = 4242, 99 // not alive: it ended while the manager was down
	e.record(a)

	e.pass()
	e.clock.Advance(reconcile.DefaultJobWordGrace)
	e.pass()
	e.clock.Advance(time.Second)
	e.pass()
	got := e.attempt(id)
	require.Equal(t, rm.Lost, got.Outcome.Reason, "%s", got.Outcome)
	told, _ := e.meters.endedWith(id)
	assert.Equal(t, rm.Lost, told.Reason, "the meters are told it was lost")

	e.clock.Advance(time.Minute)
	e.demand(0, started(a.RunnerName, 21), completed(a.RunnerName, 21))
	e.pass()
	got = e.attempt(id)
	assert.Equal(t, rm.StateFinished, got.State)
	assert.Equal(t, rm.CompletedJob, got.Outcome.Kind, "%s", got.Outcome)
	assert.Equal(t, jobKey(21), got.Job.ID, "a late job end names the job by its string id")
	assert.False(t, got.BusyAt.IsZero())
	assert.Contains(t, e.logs.String(), "ran a job after all")
	told, _ = e.meters.endedWith(id)
	assert.Equal(t, rm.CompletedJob, told.Kind, "and of the correction, so its peak counts")
}
