package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// TestJobsSeenInScaleSetMode: with more jobs than a scale set's max, the
// status shows the jobs that run on their attempts and counts the ones
// that wait, at max, naming those GitHub names: all of them when it
// offers jobs (JobAvailable), none when it assigns directly and holds the
// rest back unnamed (as reported of github.com). The waiting were
// invisible in scale-set mode ("waiting 0").
func TestJobsSeenInScaleSetMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		direct bool
		named  int
	}{{"offered", false, 4}, {"direct", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []fakegithub.Option
			if tc.direct {
				opts = append(opts, fakegithub.WithDirectAssignment())
			}
			w := newWorld(t, opts...)
			d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			p := w.addPolicy(t, d, "home", false)
			// Jobs that hold their runner until released: the status is read
			// while two run and four wait, whatever the machine's pace.
			release := filepath.Join(t.TempDir(), "release")
			for range 6 {
				w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "build",
					Script: "while [ ! -e '" + release + "' ]; do sleep 0.05; done"})
			}
			stop := start(t, d)

			var st status.Status
			require.Eventually(t, func() bool {
				st = d.Status()
				running := 0
				for _, j := range st.Jobs {
					if !j.Waiting() {
						running++
					}
				}
				waits := st.Waits()
				return running == 2 && len(waits) == 1 && waits[0].Waiting == 4 && waits[0].Named == tc.named
			}, 30*time.Second, 20*time.Millisecond)
			for _, j := range st.Jobs {
				assert.Equal(t, p.ID, j.Policy)
				assert.Equal(t, "build", j.Name)
				if j.Waiting() {
					assert.Equal(t, "at max 2", j.WaitReason)
					assert.Equal(t, status.JobQueued, j.State)
					assert.True(t, j.Attempt.IsZero())
				} else {
					assert.False(t, j.Attempt.IsZero())
					assert.NotEmpty(t, j.RunnerName)
				}
			}
			require.Len(t, st.Policies, 1)
			assert.Equal(t, 4, st.Policies[0].Waiting)
			assert.Equal(t, "at max 2", st.Policies[0].WaitReason)

			// Let every job end: nothing is left waiting or running.
			require.NoError(t, os.WriteFile(release, nil, 0o600))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			require.NoError(t, w.gh.WaitJobsCompleted(ctx))
			require.Eventually(t, func() bool { return len(d.Status().Jobs) == 0 }, 30*time.Second, 20*time.Millisecond)
			// Each job's start is split from GitHub's own times, journaled
			// with the attempt and counted in the policy's last hour.
			assert.Equal(t, 6, d.Status().Policies[0].JobStart.Jobs)
			as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
			require.NoError(t, err)
			split := 0
			for _, a := range as {
				if s, ok := a.StartSplit(); ok {
					split++
					assert.False(t, a.Job.AssignedAt.IsZero(), "scale-set mode tells the assignment")
					assert.Positive(t, s.Total())
				}
			}
			assert.Equal(t, 6, split)
			require.NoError(t, stop())
		})
	}
}
