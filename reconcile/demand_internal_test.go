package reconcile

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// TestDemandNowJobEnds: a job that ended after the figure's time is taken
// off the figure until a newer figure comes, or one that comes with the
// job's completion (a classic figure a webhook updated keeps its poll's
// time, and must not take the job off twice).
func TestDemandNowJobEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const job7 = "5b1e5b0c-7f3a-4d2e-9c4e-0a7d8e9f1b27" // a scale-set jobId: matched as the string it is
	l := &Loop{log: slog.New(slog.DiscardHandler), nudge: make(chan struct{}, 1)}
	l.ReportDemand(rm.Demand{Wanted: 3, At: t0})
	l.jobEnded(t0.Add(-time.Second), "1", "r1") // before the figure: counted already
	assert.Equal(t, 3, l.demandNow())

	l.jobEnded(t0.Add(time.Second), job7, "r7")
	l.jobEnded(t0.Add(2*time.Second), "", "r8") // concluded before GitHub named its job
	l.jobEnded(t0.Add(2*time.Second), "", "r9")
	assert.Equal(t, 0, l.demandNow(), "three ends the figure may still count")

	// The figure comes again, same time, with job 7's completion: it no
	// longer counts job 7.
	l.ReportDemand(rm.Demand{Wanted: 3, At: t0, Events: []rm.JobEvent{{Kind: rm.JobCompleted, JobID: job7, RunnerName: "r7"}}})
	assert.Equal(t, 1, l.demandNow(), "job 7 off once, the others' ends still off")
	l.ReportDemand(rm.Demand{Wanted: 2, At: t0, Events: []rm.JobEvent{{Kind: rm.JobCompleted, JobID: "8", RunnerName: "r8"}}})
	assert.Equal(t, 1, l.demandNow(), "r8's job named by its runner, off once")

	l.jobEnded(t0.Add(2*time.Second), job7, "r7") // noted after its word came
	assert.Equal(t, 1, l.demandNow(), "an end whose completion a figure already told is not taken off")

	l.ReportDemand(rm.Demand{Wanted: 1, At: t0.Add(3 * time.Second)})
	assert.Equal(t, 1, l.demandNow(), "a figure newer than every end (r9's)")

	// A late end is matched by the job's string id alone: the completion
	// names the job and no runner, and a job whose id differs by case only
	// is another job (ids are compared as the strings they are).
	const job10 = "A1B2C3D4-0000-4000-8000-00000000000a"
	l.jobEnded(t0.Add(4*time.Second), job10, "r10")
	l.jobEnded(t0.Add(4*time.Second), "a1b2c3d4-0000-4000-8000-00000000000a", "r11")
	assert.Equal(t, 0, l.demandNow(), "two ends after the figure")
	l.ReportDemand(rm.Demand{Wanted: 3, At: t0.Add(3 * time.Second), Events: []rm.JobEvent{{Kind: rm.JobCompleted, JobID: job10}}})
	assert.Equal(t, 2, l.demandNow(), "job10's end is no longer taken off, r11's still is")
}
