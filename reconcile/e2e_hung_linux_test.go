//go:build linux

package reconcile_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestE2EHungAfterItsJob: a real fake runner reports its job's end, so the
// fake GitHub says the job completed (a scale-set JobCompleted message; a
// classic job's status), and then hangs. The manager stops it after the
// configured HungGrace, concludes it CompletedJob with the reason, and its
// slot (max 1) serves the next job.
func TestE2EHungAfterItsJob(t *testing.T) {
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		t.Run(mode.String(), func(t *testing.T) {
			const grace = 1500 * time.Millisecond
			w := newWorld(t, worldOpts{mode: mode, max: 1})
			cfg := w.supervisorConfig(nil, nil)
			cfg.Loop.HungGrace = grace
			labels := []string{e2eSet}
			if mode == rm.ModeClassic {
				labels = []string{"self-hosted", e2eSet}
			}
			hung := w.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: labels, Duration: 100 * time.Millisecond, HangAfter: true})
			_, stop := w.run(cfg)
			defer stop()

			var doneAt time.Time
			w.waitFor(30*time.Second, "the hung job to complete at GitHub", func() bool {
				for _, j := range w.fake.Jobs() {
					if j.ID == hung && j.Status == "completed" {
						doneAt = j.CompletedAt
						return true
					}
				}
				return false
			})
			seen := map[rm.AttemptID]bool{}
			a := w.nextEnded(30*time.Second, seen)
			assert.GreaterOrEqual(t, a.EndedAt.Sub(doneAt), grace, "not stopped before the grace")
			assert.Equal(t, rm.CompletedJob, a.Outcome.Kind, a.Outcome.String())
			assert.Equal(t, "stopped: hung after its job ended", a.Outcome.Detail)
			assert.Equal(t, w.jobKey(mode, hung), a.Job.ID, "its job is named")
			assert.Equal(t, 1, strings.Count(w.logs.String(), "runner hung after its job ended"), "one warning")

			next := w.enqueue(1, 100*time.Millisecond, 8<<20)[0]
			w.waitJobs(30 * time.Second)
			// The next runner exited by itself; GitHub names its job (a
			// classic poll may name it after its conclusion).
			w.waitFor(30*time.Second, "the next job's attempt to be concluded and named", func() bool {
				for _, b := range w.attempts() {
					if b.ID != a.ID && !b.Live() && b.Job.ID == w.jobKey(mode, next) && b.Outcome.Kind == rm.CompletedJob {
						return true
					}
				}
				return false
			})
			w.settled(15 * time.Second)
		})
	}
}

// jobKey is the id the journal names fake job id by: the scale-set
// message's jobId, or the REST job number in classic mode.
func (w *world) jobKey(mode rm.Mode, id int64) string {
	if mode == rm.ModeClassic {
		return strconv.FormatInt(id, 10)
	}
	rec, _ := w.fake.Job(id)
	return rec.ScaleSetJobID
}
