package daemon_test

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// A runner GitHub deprecated (exit code 7) does not fail launch after
// launch: the policy holds its launches with a note naming the fix, and
// launches again once its runner changed.
func TestDeprecatedRunnerHoldsLaunches(t *testing.T) {
	w := newWorld(t)
	w.gh.MarkRunnerVersionDeprecated()
	var passes atomic.Int64
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		OnPass: func(string, time.Duration, error) { passes.Add(1) }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "old", false)
	start(t, d)
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"old"}, Name: "j", Duration: 100 * time.Millisecond})

	note := func() string {
		for _, ps := range d.Status().Policies {
			if ps.ID == p.ID {
				return ps.LastError
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return strings.Contains(note(), "runner version deprecated") }, 30*time.Second, 20*time.Millisecond)
	assert.Contains(t, note(), "runner-manager runner install --latest", "the note names the fix")
	failed := func() []rm.Attempt {
		as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
		require.NoError(t, err)
		for _, a := range as {
			require.Falsef(t, a.Live() && a.State != rm.StatePending && a.State != rm.StateRegistering && a.State != rm.StateStarting,
				"attempt %s is %s", a.ID, a.State)
		}
		return as
	}
	held := len(failed())
	require.NotZero(t, held)
	for _, a := range failed() {
		if !a.Live() {
			require.NotNil(t, a.ExitCode)
			assert.Equal(t, 7, *a.ExitCode)
			assert.Contains(t, a.Outcome.Detail, "deprecated", "the journal says why")
		}
	}
	// Many passes later, no more launches.
	from := passes.Load()
	require.Eventually(t, func() bool { return passes.Load() >= from+20 }, 30*time.Second, 10*time.Millisecond)
	assert.Len(t, failed(), held, "no launch while the runner is deprecated")
	assert.LessOrEqual(t, held, p.Max+1, "at most the first launches failed")

	// A runner put in place after the exit lifts the hold: the policy tries again.
	now := time.Now()
	require.NoError(t, os.Chtimes(w.runnerDir, now, now))
	require.Eventually(t, func() bool { return len(failed()) > held }, 30*time.Second, 20*time.Millisecond)
}
