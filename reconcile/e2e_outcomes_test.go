//go:build linux

package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
)

// wordOnly is the native launcher without the runner's own trace of a job
// (RanJob is always false): outcomes come from GitHub's word and the journal alone, as with
// a runner that leaves no Worker log.
type wordOnly struct{ n *native.Launcher }

func (l wordOnly) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	return l.n.Launch(ctx, spec)
}

func (l wordOnly) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	return l.n.Adopt(a, pid, start)
}
func (l wordOnly) Cleanup(a rm.AttemptID, failed bool) error { return l.n.Cleanup(a, failed) }

// RanJob cannot tell, as a launcher that reads no trace of the runner's
// jobs answers.
func (l wordOnly) RanJob(rm.AttemptID) bool { return false }

// assertJobsCompleted checks that every job the fake served has exactly
// one attempt, completed_job naming it, on the runner that ran it.
func (w *world) assertJobsCompleted(t *testing.T, named bool) {
	t.Helper()
	byRunner := map[string]rm.Attempt{}
	for _, a := range w.attempts() {
		byRunner[a.RunnerName] = a
	}
	for _, j := range w.fake.Jobs() {
		require.Equal(t, "completed", j.Status, "job %d", j.ID)
		a, ok := byRunner[j.RunnerName]
		if !assert.True(t, ok, "job %d ran on %s, an attempt of this manager", j.ID, j.RunnerName) {
			continue
		}
		assert.Equal(t, rm.CompletedJob, a.Outcome.Kind, "job %d's attempt %s: %s", j.ID, a.ID, a.Outcome)
		if named {
			assert.Equal(t, w.jobID(j), a.Job.ID, "attempt %s names its job", a.ID)
		}
	}
}

// TestE2EClassicJobWord: classic runners that leave no trace of their
// jobs are concluded from GitHub's word on the workflow jobs: at the first
// poll after their exit when it comes within the grace, and corrected to
// completed_job by a poll that comes after the grace ran out.
func TestE2EClassicJobWord(t *testing.T) {
	tests := []struct {
		name        string
		poll, grace time.Duration
	}{
		{"PollWithinGrace", 300 * time.Millisecond, 20 * time.Second},
		{"PollAfterGrace", 2 * time.Second, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 3, poll: tt.poll})
			w.enqueue(6, 200*time.Millisecond, 8<<20)
			cfg := w.supervisorConfig(wordOnly{native.NewLauncher(w.dataDir, native.WithLogger(w.log))}, nil)
			cfg.Loop.JobWordGrace = tt.grace
			w.run(cfg)
			w.waitJobs(60 * time.Second)
			w.settled(30 * time.Second)
			ran := map[string]bool{}
			for _, j := range w.fake.Jobs() {
				ran[j.RunnerName] = true
			}
			if !assert.Eventually(t, func() bool {
				for _, a := range w.attempts() {
					if ran[a.RunnerName] && (a.Outcome.Kind != rm.CompletedJob || !a.Job.Known()) {
						return false
					}
				}
				return true
			}, 3*tt.poll+5*time.Second, 20*time.Millisecond, "every attempt that ran a job is completed_job, named") {
				for _, a := range w.attempts() {
					t.Logf("attempt %s ran=%v: %s job %q", a.ID, ran[a.RunnerName], a.Outcome, a.Job.ID)
				}
			}
			w.assertJobsCompleted(t, true)
			if tt.grace > 10*time.Second {
				for _, a := range w.attempts() {
					assert.Less(t, a.EndedAt.Sub(a.StartedAt), tt.grace/2, "attempt %s concluded at GitHub's word, not at the grace", a.ID)
				}
			}
		})
	}
}

// TestE2EClassicStopWithBusyRunners: the manager stops (no drain) while
// its classic runners are busy; they finish their jobs while it is down.
// At the next start each one's attempt is completed_job, none lost.
func TestE2EClassicStopWithBusyRunners(t *testing.T) {
	w := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 4, poll: 200 * time.Millisecond})
	w.enqueue(4, 3*time.Second, 8<<20)
	_, stop := w.run(w.supervisorConfig(nil, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.fake.WaitFor(ctx, func() bool {
		running := 0
		for _, j := range w.fake.Jobs() {
			if j.Status == "in_progress" {
				running++
			}
		}
		return running == 4
	}), "4 runners busy")
	stop()
	w.waitJobs(30 * time.Second)
	require.Eventually(t, func() bool { return countRunnerProcesses(w.dataDir) == 0 }, 10*time.Second, 20*time.Millisecond)

	w.run(w.supervisorConfig(nil, nil))
	w.settled(30 * time.Second)
	// The job of each is named when the first poll after the start passes
	// on the jobs GitHub lists as completed with their runners.
	w.assertJobsCompleted(t, false)
	for _, a := range w.attempts() {
		assert.NotEqual(t, rm.Lost, a.Outcome.Reason, "attempt %s: %s", a.ID, a.Outcome)
	}
}

// TestE2EScaleDownIsNotAFailure: idle runners kept for min idle are scaled
// down when min idle drops; none is a failure, none pauses launches, and
// no root is kept with the failed ones.
func TestE2EScaleDownIsNotAFailure(t *testing.T) {
	w := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 6, minIdle: 6})
	cfg := w.supervisorConfig(nil, nil)
	cfg.Loop.MaxFailedLaunchesPerMinute = 3
	sup, _ := w.run(cfg)
	require.Eventually(t, func() bool {
		n := 0
		for _, a := range w.attempts() {
			if a.State == rm.StateIdle {
				n++
			}
		}
		return n == 6
	}, 30*time.Second, 20*time.Millisecond, "6 idle runners")
	pol := w.policy
	pol.MinIdle = 0
	require.NoError(t, w.st.UpdatePolicy(t.Context(), pol))
	sup.Refresh()
	w.settled(30 * time.Second)

	ended := w.attempts()
	require.Len(t, ended, 6)
	for _, a := range ended {
		assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, "attempt %s: %s", a.ID, a.Outcome)
	}
	w.enqueue(3, 100*time.Millisecond, 8<<20)
	w.waitJobs(20 * time.Second)
	assert.NotContains(t, w.logs.String(), "launches paused")
	assert.NotContains(t, w.logs.String(), "attempt failed")
}
