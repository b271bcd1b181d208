package reconcile_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestScaleUpWritesTheJournalFirst(t *testing.T) {
	e := newEnv(t, nil, nil)
	findLive := func(name string) (rm.Attempt, bool) {
		for _, a := range e.live() {
			if a.RunnerName == name {
				return a, true
			}
		}
		return rm.Attempt{}, false
	}
	e.target.onJIT = func(name string) {
		a, ok := findLive(name)
		if assert.True(t, ok, "the row exists before the JIT request") {
			assert.Equal(t, rm.StateRegistering, a.State, "registering is recorded before the call")
		}
	}
	e.launcher.onLaunch = func(spec rm.LaunchSpec) {
		a := e.attempt(spec.Attempt)
		assert.Equal(t, rm.StateRegistering, a.State)
		assert.NotZero(t, a.GitHubRunnerID, "the registration is recorded before the launch")
		assert.Equal(t, "SECRET-JIT-"+a.RunnerName, spec.JITConfig)
	}

	e.demand(3)
	res := e.pass()

	live := e.live()
	require.Len(t, live, 2, "demand 3 is clamped to max 2")
	for _, a := range live {
		assert.Equal(t, rm.StateStarting, a.State)
		assert.True(t, strings.HasPrefix(a.RunnerName, rm.RunnerNamePrefix(e.host.ID)))
		assert.NotZero(t, a.PID)
		assert.NotZero(t, a.ProcessStart)
		assert.NotZero(t, a.GitHubRunnerID)
	}
	assert.Equal(t, 2, e.loop.Capacity())
	assert.Equal(t, reconcile.DefaultActiveRequeue, res.RequeueAfter)
	assert.NotContains(t, e.logs.String(), "SECRET-JIT", "a JIT config never reaches a log")
}

// launchOne launches one runner (max 1, demand 1) and returns its attempt
// and process.
func launchOne(t *testing.T, e *env) (rm.Attempt, *fakeProc) {
	t.Helper()
	e.demand(1)
	e.pass()
	live := e.live()
	require.Len(t, live, 1)
	p := e.launcher.proc(live[0].ID)
	require.NotNil(t, p)
	return live[0], p
}

func TestConclusion(t *testing.T) {
	tests := []struct {
		name string
		// run plays the runner's life after its launch.
		run         func(e *env, a rm.Attempt, p *fakeProc)
		kind        rm.OutcomeKind
		reason      rm.FailureReason
		detail      string
		exitCode    int
		job         int64
		removed     bool // its registration was removed by the manager
		cleanFailed bool
		log         string
	}{
		{
			name: "CompletedJob",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				e.demand(1, started(a.RunnerName, 7))
				e.pass()
				require.Equal(e.t, rm.StateBusy, e.attempt(a.ID).State)
				e.target.drop(a.RunnerName) // GitHub removes an ephemeral runner after its job
				p.exit(0)
				e.pass()
			},
			kind: rm.CompletedJob, exitCode: 0, job: 7,
		},
		{
			name: "JobWordAfterExit",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				p.exit(0)
				e.pass()
				require.True(e.t, e.attempt(a.ID).Live(), "waits for GitHub's word")
				e.target.drop(a.RunnerName)
				e.demand(1, started(a.RunnerName, 8), completed(a.RunnerName, 8))
				e.clock.Advance(time.Second)
				e.pass()
			},
			kind: rm.CompletedJob, exitCode: 0, job: 8,
		},
		{
			name: "WorkerLog",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				e.launcher.work(a.ID) // the runner's Worker log: it ran a job GitHub has not named yet
				p.exit(0)
				e.pass()
				got := e.attempt(a.ID)
				require.Equal(e.t, rm.CompletedJob, got.Outcome.Kind, "concluded at once, without GitHub's word")
				require.False(e.t, got.Job.Known(), "the job is not known yet")
				require.False(e.t, got.BusyAt.IsZero(), "it was busy")
				e.target.drop(a.RunnerName)
				e.clock.Advance(time.Second)
				e.demand(1, started(a.RunnerName, 11), completed(a.RunnerName, 11))
				e.pass() // a later word names the job of the ended attempt
			},
			kind: rm.CompletedJob, detail: "Worker log", exitCode: 0, job: 11,
		},
		{
			name: "WorkerLogCrash",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				e.launcher.work(a.ID)
				p.exit(2)
				e.pass()
			},
			kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job", exitCode: 2,
			removed: true, cleanFailed: true,
		},
		{
			name: "IdleExit",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				p.exit(0)
				e.pass()
				require.True(e.t, e.attempt(a.ID).Live())
				e.clock.Advance(reconcile.DefaultJobWordGrace)
				e.pass()
			},
			kind: rm.ExitedIdleWithoutWork, detail: "exited 0 without a job", exitCode: 0, removed: true,
		},
		{
			name: "ExitCode1",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				p.exit(1)
				e.pass()
			},
			kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "exit code 1: the runner refused its configuration",
			exitCode: 1, removed: true, cleanFailed: true,
		},
		{
			name: "Deprecated",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				p.exit(7)
				e.pass()
			},
			kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "deprecated", exitCode: 7, removed: true,
			cleanFailed: true, log: "install a newer runner",
		},
		{
			name: "CrashDuringJob",
			run: func(e *env, a rm.Attempt, p *fakeProc) {
				e.demand(1, started(a.RunnerName, 9))
				e.pass()
				p.exit(2)
				e.pass()
			},
			kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job", exitCode: 2, job: 9,
			removed: true, cleanFailed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
			a, p := launchOne(t, e)
			e.meters.rss[a.ID] = 64 << 20
			tt.run(e, a, p)

			got := e.attempt(a.ID)
			require.False(t, got.Live(), "concluded: %+v", got)
			assert.Equal(t, tt.kind, got.Outcome.Kind)
			assert.Equal(t, tt.reason, got.Outcome.Reason)
			assert.Contains(t, got.Outcome.Detail, tt.detail)
			require.NotNil(t, got.ExitCode)
			assert.Equal(t, tt.exitCode, *got.ExitCode)
			if tt.job != 0 {
				assert.Equal(t, jobKey(tt.job), got.Job.ID)
			} else {
				assert.False(t, got.Job.Known(), "no job named: %+v", got.Job)
			}
			assert.Equal(t, rm.AttemptUsage{PeakRSSBytes: 64 << 20, CPUAvgMillicores: 250, CPUPeakMillicores: 900, Samples: 3}, got.Usage)
			told, ok := e.meters.endedWith(a.ID)
			require.True(t, ok, "the meters are told it ended")
			assert.Equal(t, got.Outcome, told, "and how")
			assert.False(t, e.target.has(a.RunnerName), "no registration is left")
			if tt.removed {
				assert.Positive(t, e.target.count("remove"))
			} else {
				assert.Zero(t, e.target.count("remove"), "an ephemeral runner's registration is gone after its job")
			}
			failed, cleaned := e.launcher.cleanup(a.ID)
			assert.True(t, cleaned, "its directory is cleaned")
			assert.Equal(t, tt.cleanFailed, failed)
			if tt.log != "" {
				assert.Contains(t, e.logs.String(), tt.log)
			}
			live := e.live()
			if tt.exitCode == 7 {
				// A deprecated runner is not launched again.
				assert.Empty(t, live, "launches are held until a newer runner is there")
				return
			}
			// The slot was refilled the moment the runner was seen gone.
			require.Len(t, live, 1)
			assert.NotEqual(t, a.ID, live[0].ID)
		})
	}
}

func TestAnExitedRunnerFreesItsSlotAtOnce(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	a, p := launchOne(t, e)
	p.exit(0) // no job known yet: the attempt waits for GitHub's word...
	e.pass()
	assert.True(t, e.attempt(a.ID).Live())
	assert.Equal(t, 2, e.launcher.launches(), "...but its slot is refilled in the same pass")
	st := e.loop.Status()
	require.Len(t, st.Policies, 1)
	assert.Equal(t, 1, st.Policies[0].Live, "an exited runner holds no slot")
}

func TestStartTimeout(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) { c.StartTimeout = time.Minute })
	a, p := launchOne(t, e)
	e.clock.Advance(30 * time.Second)
	res := e.pass()
	assert.LessOrEqual(t, res.RequeueAfter, 30*time.Second, "wakes for the timeout")
	assert.False(t, p.wasStopped())

	e.clock.Advance(30 * time.Second)
	e.pass()
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
	assert.False(t, e.target.has(a.RunnerName), "deregistered before it is stopped")
	assert.Equal(t, "stopping: start timeout", e.attempt(a.ID).LastMessage)
	e.pass()
	got := e.attempt(a.ID)
	assert.Equal(t, rm.StateFailed, got.State)
	assert.Equal(t, rm.StartTimeout, got.Outcome.Reason)
}

func TestZombie(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.ZombieGrace = time.Minute
		c.RunnerListEvery = time.Millisecond
	})
	a, p := launchOne(t, e)
	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	e.clock.Advance(time.Second)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(a.ID).State, "seen online")

	e.target.drop(a.RunnerName) // alive, but GitHub lost it
	e.clock.Advance(time.Second)
	e.pass()
	e.clock.Advance(59 * time.Second)
	e.pass()
	assert.False(t, p.wasStopped(), "within the grace")
	e.clock.Advance(2 * time.Second)
	e.pass()
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
	e.pass()
	got := e.attempt(a.ID)
	// GitHub removed it while it listened without a job: an idle end,
	// not a failure, though it had to be stopped.
	assert.Equal(t, rm.StateFinished, got.State)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind, got.Outcome.String())
	assert.Contains(t, got.Outcome.Detail, "removed idle by GitHub")
	assert.Contains(t, got.Outcome.Detail, "zombie")
	assert.Contains(t, e.logs.String(), "runner is a zombie")
}

// TestRemovedIdleExitsNonZero: a runner GitHub removed while it listened
// without a job, which then exits with an error code (the real runner
// exits 1 when its registration is gone as it opens a session), ended
// idle once GitHub's word on a job could no longer be on its way.
func TestRemovedIdleExitsNonZero(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.ZombieGrace = time.Minute
		c.RunnerListEvery = time.Millisecond
	})
	a, p := launchOne(t, e)
	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	e.clock.Advance(time.Second)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(a.ID).State, "seen online")

	e.target.drop(a.RunnerName) // GitHub removed it, idle
	e.clock.Advance(time.Second)
	e.pass()
	p.exit(1)
	e.clock.Advance(time.Second)
	e.pass()
	assert.True(t, e.attempt(a.ID).Live(), "waits for GitHub's word on a job")
	e.clock.Advance(reconcile.DefaultJobWordGrace)
	e.pass()
	got := e.attempt(a.ID)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind, got.Outcome.String())
	assert.Contains(t, got.Outcome.Detail, "removed idle by GitHub (exit code 1")
	require.NotNil(t, got.ExitCode)
	assert.Equal(t, 1, *got.ExitCode)
}

func TestLaunchFailure(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	e.launcher.launchErr = errors.New("runner directory /nowhere/runner: no such file or directory")
	e.demand(1)
	e.pass()
	ended := e.ended()
	require.Len(t, ended, 1)
	a := ended[0]
	assert.Equal(t, rm.LaunchFailed, a.Outcome.Reason)
	assert.Contains(t, a.Outcome.Detail, "/nowhere/runner")
	assert.False(t, e.target.has(a.RunnerName), "its registration is removed")
	failed, ok := e.launcher.cleanup(a.ID)
	assert.True(t, ok && failed, "its directory is kept for debugging")
	assert.Contains(t, e.loop.Status().Policies[0].LastError, "launch failed")

	e.launcher.launchErr = nil // the loop goes on
	e.pass()
	require.Len(t, e.live(), 1)
}

func TestFailedLaunchesPerMinuteAreCapped(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 10), func(c *reconcile.Config) {
		c.MaxFailedLaunchesPerMinute = 3
		c.MaxLaunchesPerPass = 10
	})
	e.launcher.launchErr = errors.New("boom")
	e.demand(10)
	res := e.pass()
	assert.Equal(t, 3, e.target.count("jit"), "no more launches than may fail")
	e.clock.Advance(time.Second)
	e.pass()
	assert.Equal(t, 3, e.target.count("jit"), "none while the budget is spent")
	assert.Contains(t, e.loop.Status().Policies[0].LastError, "3 launches failed in the last minute")
	assert.LessOrEqual(t, res.RequeueAfter, reconcile.DefaultActiveRequeue)

	e.clock.Advance(time.Minute)
	e.pass()
	assert.Equal(t, 6, e.target.count("jit"), "launching again after a minute")
}

func TestRegistrationFailureBacksOff(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) { c.BackoffBase = time.Second })
	e.target.setErr(errors.New("GitHub answered 500"), nil, nil)
	e.demand(1)
	res, err := e.loop.Reconcile(e.ctx)
	require.Error(t, err)
	assert.LessOrEqual(t, res.RequeueAfter, time.Second)
	ended := e.ended()
	require.Len(t, ended, 1)
	assert.Equal(t, rm.GitHubUnavailable, ended[0].Outcome.Reason)
	assert.Contains(t, ended[0].Outcome.Detail, "500")

	calls := e.target.count("jit") + e.target.count("list") + e.target.count("remove")
	e.loop.Nudge()
	_, err = e.loop.Reconcile(e.ctx)
	require.NoError(t, err, "nothing asked of GitHub: nothing failed")
	assert.Equal(t, calls, e.target.count("jit")+e.target.count("list")+e.target.count("remove"), "no calls during the backoff")

	e.target.setErr(nil, nil, nil)
	e.clock.Advance(time.Second)
	e.pass()
	require.Len(t, e.live(), 1, "resumed after the backoff")
}

func TestRateLimitHoldsEveryCall(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	reset := e.clock.Now().Add(time.Hour)
	e.target.setErr(&rm.RateLimitError{Reset: reset}, nil, nil)
	e.demand(1)
	res, err := e.loop.Reconcile(e.ctx)
	var rl *rm.RateLimitError
	require.ErrorAs(t, err, &rl)
	assert.Equal(t, time.Hour, res.RequeueAfter, "the next pass at the reset")
	e.target.setErr(nil, nil, nil)

	calls := e.target.count("jit") + e.target.count("list") + e.target.count("remove")
	for range 3 {
		e.clock.Advance(15 * time.Minute)
		res = e.pass()
		assert.LessOrEqual(t, res.RequeueAfter, time.Hour-15*time.Minute)
	}
	assert.Equal(t, calls, e.target.count("jit")+e.target.count("list")+e.target.count("remove"), "no call before the reset")
	assert.Empty(t, e.live())

	e.clock.Advance(16 * time.Minute)
	e.pass()
	assert.Len(t, e.live(), 1, "work resumes after the reset")
}

func TestRepairsWhatACrashLeft(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 10), func(c *reconcile.Config) { c.JobWordGrace = time.Minute })
	pol, host := e.policy.ID, e.host.ID
	attempt := func() *storetest.AttemptBuilder {
		return storetest.NewAttempt().Policy(pol).Host(host).CreatedAt(e.clock.Now().Add(-time.Hour))
	}
	pending := e.record(attempt().Build())
	registering := e.record(attempt().State(rm.StateRegistering).GitHubRunnerID(555).Build())
	e.target.add(rm.Runner{ID: 555, Name: registering.RunnerName})
	alive := &fakeProc{pid: 4242, start: 99, done: make(chan struct{})}
	e.launcher.alive[4242] = alive
	adopted := e.record(attempt().State(rm.StateIdle).GitHubRunnerID(556).ProcessID(4242).ProcessStart(99).Build())
	e.target.add(rm.Runner{ID: 556, Name: adopted.RunnerName})
	busyGone := e.record(attempt().State(rm.StateBusy).GitHubRunnerID(557).ProcessID(4243).ProcessStart(1).
		Job(rm.Job{ID: jobKey(31), Name: "test"}).Build())
	listedGone := e.record(attempt().State(rm.StateIdle).GitHubRunnerID(558).ProcessID(4244).ProcessStart(1).Build())
	e.target.add(rm.Runner{ID: 558, Name: listedGone.RunnerName})
	lost := e.record(attempt().State(rm.StateStarting).GitHubRunnerID(559).ProcessID(4245).ProcessStart(1).Build())
	prefix := rm.RunnerNamePrefix(host)
	e.target.add(rm.Runner{ID: 777, Name: prefix + rm.NewAttemptID().String()})
	e.target.add(rm.Runner{ID: 778, Name: prefix + rm.NewAttemptID().String(), Busy: true})
	e.target.add(rm.Runner{ID: 779, Name: "rm-someone-else-runner"})

	e.pass()
	outcome := func(a rm.Attempt) rm.Outcome { return e.attempt(a.ID).Outcome }
	assert.Equal(t, rm.RegistrationFailed, outcome(pending).Reason)
	assert.Equal(t, rm.LaunchFailed, outcome(registering).Reason)
	assert.False(t, e.target.has(registering.RunnerName), "its registration is removed")
	assert.True(t, e.attempt(adopted.ID).Live(), "a live runner is re-adopted")
	assert.False(t, alive.wasStopped())
	assert.Equal(t, rm.CompletedJob, outcome(busyGone).Kind)
	assert.Contains(t, outcome(busyGone).Detail, "while the manager was down")
	assert.True(t, e.attempt(listedGone.ID).Live(), "waits for GitHub's word first")
	runners, _ := e.target.Runners(e.ctx, "")
	var names []string
	for _, r := range runners {
		names = append(names, fmt.Sprint(r.ID))
	}
	assert.ElementsMatch(t, []string{"556", "558", "778", "779"}, names,
		"the orphan registration is removed; a busy one and another host's are left")

	e.clock.Advance(time.Minute)
	e.pass()
	assert.Equal(t, rm.ProcessExitedUnexpectedly, outcome(listedGone).Reason)
	assert.Contains(t, outcome(listedGone).Detail, "while the manager was down")
	assert.False(t, e.target.has(listedGone.RunnerName))
	assert.Equal(t, rm.Lost, outcome(lost).Reason)

	alive.exit(0) // the re-adopted runner is watched: its exit is concluded
	e.demand(0, started(adopted.RunnerName, 40))
	e.pass()
	assert.Equal(t, rm.CompletedJob, outcome(adopted).Kind)
	assert.Empty(t, e.live())
}

func TestScaleDown(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 3), func(c *reconcile.Config) {
		c.RunnerListEvery = time.Millisecond
		c.ScaleDownAfter = 10 * time.Second
	})
	e.demand(3)
	e.pass()
	live := e.live()
	require.Len(t, live, 3)
	for _, a := range live {
		e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	}
	busy, idle, lucky := live[0], live[1], live[2]
	e.target.set(busy.RunnerName, func(r *rm.Runner) { r.Busy = true })
	e.clock.Advance(time.Second)
	e.demand(3, started(busy.RunnerName, 1))
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(busy.ID).State)
	require.Equal(t, rm.StateIdle, e.attempt(idle.ID).State)

	e.demand(1) // the busy runner's job only
	e.clock.Advance(5 * time.Second)
	res := e.pass()
	assert.LessOrEqual(t, res.RequeueAfter, 5*time.Second, "wakes when the idle ones may go")
	assert.Len(t, e.live(), 3, "not idle long enough yet")

	// A job lands on one of them meanwhile: GitHub refuses its removal.
	e.target.set(lucky.RunnerName, func(r *rm.Runner) { r.Busy = true })
	e.clock.Advance(5 * time.Second)
	e.pass()
	require.Eventually(t, e.launcher.proc(idle.ID).wasStopped, 5*time.Second, time.Millisecond)
	assert.False(t, e.launcher.proc(busy.ID).wasStopped(), "a busy runner is never scaled down")
	assert.False(t, e.launcher.proc(lucky.ID).wasStopped(), "nor one GitHub says is busy")
	assert.False(t, e.target.has(idle.RunnerName), "the registration went first")
	e.pass()
	got := e.attempt(idle.ID)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind)
	assert.Equal(t, "scaled down", got.Outcome.Detail)
}

func TestScaleDownLeavesARunnerGitHubSaysIsBusy(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) { c.RunnerListEvery = time.Millisecond })
	a, p := launchOne(t, e)
	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	e.clock.Advance(time.Second)
	e.pass()
	e.target.setErr(nil, fmt.Errorf("422: %w", rm.ErrRunnerBusy), nil)
	e.demand(0)
	e.clock.Advance(time.Second)
	_, err := e.loop.Reconcile(e.ctx)
	require.NoError(t, err, "busy is an answer, not a failure")
	assert.False(t, p.wasStopped())
	assert.True(t, e.attempt(a.ID).Live())
}

func TestMemoryAdmission(t *testing.T) {
	var refusals []reconcile.Refusal
	adm := &reconcile.Admission{Memory: fakeMemory{4 << 30}, Reserve: 512 << 20}
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4).MemoryEstimate(1536<<20), func(c *reconcile.Config) {
		c.Admission = adm
		c.OnRefusal = func(_ rm.PolicyID, r reconcile.Refusal) { refusals = append(refusals, r) }
	})
	e.demand(4)
	e.pass()
	live := e.live()
	require.Len(t, live, 2, "two of 1.5 GiB fit in 3.5 GiB, three do not")
	assert.Equal(t, 2, e.loop.Capacity(), "what scale-set mode reports as maxCapacity")
	require.NotEmpty(t, refusals)
	assert.Equal(t, status.RefusedMemory, refusals[0].Reason)
	ps := e.loop.Status().Policies[0]
	assert.True(t, strings.HasPrefix(ps.LastRefusal, "memory: 3GiB committed + 1.5GiB expected > 3.5GiB"), ps.LastRefusal)
	assert.Equal(t, 2, ps.Admitted)
	assert.Equal(t, uint64(1536<<20), ps.ExpectedPeakBytes)
	assert.Equal(t, uint64(3<<30), adm.Status().CommittedBytes)

	// A runner using more than expected counts at its real size.
	e.meters.rss[live[0].ID] = 2560 << 20
	p := e.launcher.proc(live[1].ID)
	e.demand(4, started(live[1].RunnerName, 1))
	e.pass()
	p.exit(0)
	e.pass()
	assert.Len(t, e.live(), 1, "2.5 GiB + 1.5 GiB > 3.5 GiB: no replacement")
	assert.Equal(t, 1, e.loop.Capacity())
}

func TestDiskAdmission(t *testing.T) {
	adm := &reconcile.Admission{DiskFree: func(string) (uint64, error) { return 1 << 30, nil }, DiskPath: "/data", DiskFloor: 10 << 30}
	e := newEnv(t, nil, func(c *reconcile.Config) { c.Admission = adm })
	e.demand(1)
	e.pass()
	assert.Empty(t, e.live())
	assert.Equal(t, "disk: 1GiB free on /data, below the floor of 10GiB; free some space or lower the floor",
		e.loop.Status().Policies[0].LastRefusal)
	assert.Equal(t, 0, e.loop.Capacity())
}

// Below the disk floor, admission asks Reclaim (the warm slots'
// eviction) for what is missing before it refuses: a launch goes ahead
// when enough was freed, and is refused for disk when not.
func TestDiskAdmissionReclaims(t *testing.T) {
	for _, tc := range []struct {
		name       string
		evictable  uint64
		wantLive   int
		wantRefuse string
	}{
		{"enough", 12 << 30, 1, ""},
		{"not enough", 4 << 30, 0, "disk: 5GiB free on /data, below the floor of 10GiB; free some space or lower the floor"},
		{"nothing", 0, 0, "disk: 1GiB free on /data, below the floor of 10GiB; free some space or lower the floor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			free, evictable := uint64(1<<30), tc.evictable
			var asked []uint64
			adm := &reconcile.Admission{
				DiskFree: func(string) (uint64, error) { mu.Lock(); defer mu.Unlock(); return free, nil },
				DiskPath: "/data", DiskFloor: 10 << 30,
				Reclaim: func(need uint64) uint64 {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, need)
					n := min(need, evictable)
					evictable -= n
					free += n
					return n
				},
			}
			e := newEnv(t, nil, func(c *reconcile.Config) { c.Admission = adm })
			e.demand(1)
			e.pass()
			assert.Len(t, e.live(), tc.wantLive)
			mu.Lock()
			require.NotEmpty(t, asked, "admission asks before it refuses")
			assert.Equal(t, uint64(9<<30), asked[0], "it asks for what the disk lacks below the floor")
			mu.Unlock()
			if tc.wantRefuse != "" {
				assert.Equal(t, tc.wantRefuse, e.loop.Status().Policies[0].LastRefusal)
			}
		})
	}
}

func TestUserStopDuringAJob(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	a, p := launchOne(t, e)
	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	e.demand(1, started(a.RunnerName, 5))
	e.pass()
	done := e.loop.StopAttempt(a.ID)
	e.demand(0)
	e.pass()
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
	e.pass()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("StopAttempt's channel not closed")
	}
	got := e.attempt(a.ID)
	assert.Equal(t, rm.Stopped, got.Outcome.Reason)
}

func TestPoliciesSharingATarget(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), host))
	p1 := storetest.NewPolicy().Name("a").Host(host.ID).Labels("home").Max(1).Build()
	p2 := storetest.NewPolicy().Name("b").Host(host.ID).Labels("home").Max(1).Build()
	p3 := storetest.NewPolicy().Name("c").Host(host.ID).Labels("home").Max(1).Paused().Build()
	for _, p := range []rm.Policy{p1, p2, p3} {
		require.NoError(t, st.InsertPolicy(t.Context(), p))
	}
	launcher := newFakeLauncher()
	loop, err := reconcile.NewLoop(reconcile.Config{Store: st, Target: reconcile.TargetOf(newFakeTarget()), Launcher: launcher, Host: host,
		Policies: []rm.Policy{p1, p2, p3}})
	require.NoError(t, err)
	defer loop.Close()
	loop.ReportDemand(rm.Demand{Wanted: 5})
	_, err = loop.Reconcile(t.Context())
	require.NoError(t, err)
	for _, p := range []rm.Policy{p1, p2} {
		live, err := st.ActiveAttempts(t.Context(), p.ID)
		require.NoError(t, err)
		assert.Len(t, live, 1, p.Name)
	}
	live, err := st.ActiveAttempts(t.Context(), p3.ID)
	require.NoError(t, err)
	assert.Empty(t, live, "a paused policy launches nothing")
	assert.Equal(t, 2, loop.Capacity())

	other := storetest.NewPolicy().Host(host.ID).Autoscale("elsewhere", 1).Build()
	_, err = reconcile.NewLoop(reconcile.Config{Store: st, Target: reconcile.TargetOf(newFakeTarget()), Launcher: launcher, Host: host,
		Policies: []rm.Policy{p1, other}})
	assert.ErrorContains(t, err, "different targets")
}

func TestPausingScalesIdleRunnersDown(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), func(c *reconcile.Config) { c.RunnerListEvery = time.Millisecond })
	e.demand(2)
	e.pass()
	live := e.live()
	require.Len(t, live, 2)
	e.target.set(live[0].RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	e.demand(2, started(live[0].RunnerName, 3))
	e.clock.Advance(time.Second)
	e.pass()

	pol := e.policy
	pol.Paused = true
	require.NoError(t, e.st.UpdatePolicy(e.ctx, pol))
	e.clock.Advance(time.Second)
	e.pass()
	require.Eventually(t, e.launcher.proc(live[1].ID).wasStopped, 5*time.Second, time.Millisecond, "not yet online: removed")
	assert.False(t, e.launcher.proc(live[0].ID).wasStopped(), "the busy one finishes its job")
	assert.Equal(t, 2, e.launcher.launches(), "nothing launched while paused")
	assert.Equal(t, 1, e.loop.Capacity())
}

func TestDrainingStopsLaunchingAndRemovesIdleRunners(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2).MinIdle(1), func(c *reconcile.Config) { c.RunnerListEvery = time.Millisecond })
	e.demand(1)
	e.pass()
	live := e.live()
	require.Len(t, live, 2)
	e.target.set(live[0].RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	e.demand(1, started(live[0].RunnerName, 3))
	e.clock.Advance(time.Second)
	e.pass()

	e.loop.SetDraining(true)
	e.pass()
	require.Eventually(t, e.launcher.proc(live[1].ID).wasStopped, 5*time.Second, time.Millisecond)
	e.pass()
	assert.Equal(t, 1, e.loop.Live(), "the busy one is awaited")
	assert.Equal(t, 1, e.loop.Capacity(), "capacity is the busy runners: no new job is taken")
	e.launcher.proc(live[0].ID).exit(0)
	e.pass()
	assert.Zero(t, e.loop.Live())
	assert.Equal(t, 2, e.launcher.launches())
}

func TestScheduling(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.StartTimeout = 2 * time.Second
		c.JobWordGrace = 1500 * time.Millisecond
	})
	assert.Equal(t, reconcile.DefaultIdleRequeue, e.pass().RequeueAfter, "nothing live or wanted: rarely")
	e.demand(1)
	assert.Equal(t, 2*time.Second, e.pass().RequeueAfter, "the start timeout comes before the active requeue")
	a := e.live()[0]
	e.launcher.proc(a.ID).exit(0)
	e.demand(0)
	assert.Equal(t, 1500*time.Millisecond, e.pass().RequeueAfter, "wakes when the job-word grace ends")
}

// TestDemandLessTheJobsThatEnded: a demand figure counts a job until the
// next figure, though its runner may have finished it and exited; a runner
// that ended having run a job after the figure was taken is discounted from
// it, so no spare runner is launched for a job that is over.
func TestDemandLessTheJobsThatEnded(t *testing.T) {
	tests := []struct {
		name string
		// worker: the runner's Worker log says it ran a job; event: GitHub
		// said so (with a figure taken before its exit).
		worker, event bool
		// completed: GitHub said the job completed, with a figure taken
		// after (scale-set mode's message, usually before the exit).
		completed bool
		// figureAtExit: a figure is taken the moment the runner exits: it
		// no longer counts the job.
		figureAtExit bool
		launches     int // after the exit's pass
	}{
		{name: "WorkerLog", worker: true, launches: 2},
		{name: "JobEvent", event: true, launches: 2},
		{name: "CompletedWord", event: true, completed: true, launches: 3},    // that figure no longer counts the job
		{name: "NoJob", launches: 3},                                          // waits for GitHub's word; its slot is refilled
		{name: "FigureAtExit", worker: true, figureAtExit: true, launches: 3}, // a figure that is not older than the exit
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), nil)
			e.demand(2)
			e.pass()
			live := e.live()
			require.Len(t, live, 2)
			a := live[0]
			e.clock.Advance(time.Second)
			if tt.event {
				evs := []rm.JobEvent{started(a.RunnerName, 5)}
				if tt.completed {
					evs = append(evs, completed(a.RunnerName, 5))
				}
				e.demand(2, evs...)
				e.pass()
				e.clock.Advance(time.Second)
			}
			if tt.worker {
				e.launcher.work(a.ID)
			}
			if tt.figureAtExit {
				e.demand(2)
			}
			e.launcher.proc(a.ID).exit(0)
			e.target.drop(a.RunnerName)
			e.pass()
			assert.Equal(t, tt.launches, e.launcher.launches())
			assert.Equal(t, 2, e.loop.Status().Policies[0].Demand, "the status shows GitHub's figure")

			// A newer figure starts the count again: two jobs want runners.
			e.clock.Advance(time.Second)
			e.demand(2)
			e.pass()
			assert.Equal(t, 2, e.loop.Live(), "runners holding a slot")
			assert.Equal(t, 3, e.launcher.launches())
		})
	}
}
