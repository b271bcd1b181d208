package daemon_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// Each attempt's journal row names the job its runner ran by the id the
// job's source gave: a scale-set job by its messages' jobId (a UUID as on
// github.com, or a numeric string), or by their runnerRequestId where a
// server sends no jobId; a classic job by its REST number, kept as its
// number too. The daemon's status names a live attempt's job the same way.
func TestRunNamesJobsByTheirIDs(t *testing.T) {
	tests := []struct {
		name    string
		form    fakegithub.JobIDForm
		classic bool
		// want is the job id the journal holds for j, and its REST number.
		want func(t *testing.T, j fakegithub.JobRecord) (string, int64)
	}{
		{"ScaleSetUUID", fakegithub.JobIDUUID, false, func(t *testing.T, j fakegithub.JobRecord) (string, int64) {
			_, err := uuid.Parse(j.ScaleSetJobID)
			require.NoError(t, err, "the fake sends a UUID")
			return j.ScaleSetJobID, 0
		}},
		{"ScaleSetNumeric", fakegithub.JobIDNumeric, false, func(t *testing.T, j fakegithub.JobRecord) (string, int64) {
			return strconv.FormatInt(j.ID, 10), 0
		}},
		{"ScaleSetNoJobID", fakegithub.JobIDNone, false, func(t *testing.T, j fakegithub.JobRecord) (string, int64) {
			return strconv.FormatInt(j.RequestID, 10), 0
		}},
		{"Classic", fakegithub.JobIDUUID, true, func(t *testing.T, j fakegithub.JobRecord) (string, int64) {
			return strconv.FormatInt(j.ID, 10), j.ID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, fakegithub.WithScaleSetJobIDs(tt.form))
			d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ClassicPoll: 200 * time.Millisecond,
				Logger: testLogger(t)})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			p := w.addPolicy(t, d, "ids", tt.classic)
			stop := start(t, d)

			// A long job: the live status names it while it runs.
			labels := []string{"ids"}
			if tt.classic {
				labels = []string{"self-hosted", "ids"}
			}
			long := w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: labels, Name: "long", Duration: 3 * time.Second, MemoryBytes: 8 << 20})
			client := localapi.NewClient(w.dataDir)
			require.Eventually(t, func() bool {
				j, _ := w.gh.Job(long)
				if j.Status != "in_progress" {
					return false
				}
				want, _ := tt.want(t, j)
				st, err := client.Status(t.Context())
				if err != nil {
					return false
				}
				for _, a := range st.Attempts {
					if a.RunnerName == j.RunnerName && a.Job != nil && a.Job.ID == want {
						return true
					}
				}
				return false
			}, 30*time.Second, 50*time.Millisecond, "the status names the running job by its id")
			w.serve(t, 2, "ids", tt.classic)
			require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 3 }, 20*time.Second, 50*time.Millisecond)
			require.NoError(t, stop())

			as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
			require.NoError(t, err)
			byRunner := map[string]rm.Attempt{}
			for _, a := range as {
				byRunner[a.RunnerName] = a
			}
			jobs := w.gh.Jobs()
			require.Len(t, jobs, 3)
			ids := map[string]bool{}
			for _, j := range jobs {
				a, ok := byRunner[j.RunnerName]
				require.True(t, ok, "job %d ran on an attempt of ours", j.ID)
				assert.Equal(t, rm.CompletedJob, a.Outcome.Kind, "%s", a.Outcome)
				wantID, wantNumber := tt.want(t, j)
				assert.Equal(t, wantID, a.Job.ID, "attempt %s names job %d", a.ID, j.ID)
				assert.Equal(t, wantNumber, a.Job.Number, "attempt %s's REST number", a.ID)
				assert.Equal(t, j.Name, a.Job.Name)
				assert.False(t, ids[a.Job.ID], "each job its own id")
				ids[a.Job.ID] = true
			}
		})
	}
}
