//go:build linux

package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestE2EWorkerLogConcludesBeforeGitHub: in classic mode GitHub's word on
// a job comes with the next demand poll, here a minute away, long after the
// job-word grace. The runners' own Worker logs tell the manager they ran
// their jobs: each attempt is concluded completed_job at its exit, and its
// registration (which GitHub drops with an ephemeral runner) is left alone.
func TestE2EWorkerLogConcludesBeforeGitHub(t *testing.T) {
	w := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 3, poll: time.Minute})
	w.enqueue(3, 100*time.Millisecond, 8<<20)
	cfg := w.supervisorConfig(nil, nil)
	cfg.Drain = true
	_, stop := w.run(cfg)
	w.waitJobs(30 * time.Second)

	var done []rm.Attempt
	require.Eventually(t, func() bool {
		done = done[:0]
		for _, a := range w.attempts() {
			if a.Outcome.Kind == rm.CompletedJob {
				done = append(done, a)
			}
		}
		return len(done) == 3
	}, 20*time.Second, 20*time.Millisecond, "every runner concluded completed_job within the poll")
	for _, a := range done {
		require.NotNil(t, a.ExitCode)
		assert.Equal(t, 0, *a.ExitCode)
		assert.False(t, a.Job.Known(), "GitHub has not named the job yet")
		assert.Contains(t, a.Outcome.Detail, "Worker log")
		assert.False(t, a.BusyAt.IsZero())
	}
	assert.Zero(t, w.fake.Calls(fakegithub.RouteRepoDeleteRunner), "no registration delete for a runner that ran its job")
	assert.Len(t, w.attempts(), 3, "no spare runner for the jobs the last figure still counts")
	stop()
	assert.NotContains(t, w.logs.String(), "exited 0 without a job")
	for _, a := range w.attempts() {
		if a.Outcome.Kind == rm.ExitedIdleWithoutWork && !strings.Contains(a.Outcome.Detail, "drained") {
			t.Errorf("attempt %s: %s", a.ID, a.Outcome)
		}
	}
}
