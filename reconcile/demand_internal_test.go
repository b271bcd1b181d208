package reconcile

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/github"
)

// TestDemandNowJobEnds: a job that ended after the figure's time is taken
// off the figure until a newer figure comes, or one that comes with the
// job's completion (a classic figure a webhook updated keeps its poll's
// time, and must not take the job off twice).
func TestDemandNowJobEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &Loop{log: slog.New(slog.DiscardHandler), nudge: make(chan struct{}, 1)}
	l.ReportDemand(github.Demand{Wanted: 3, At: t0})
	l.jobEnded(t0.Add(-time.Second), 1, "r1") // before the figure: counted already
	assert.Equal(t, 3, l.demandNow())

	l.jobEnded(t0.Add(time.Second), 7, "r7")
	l.jobEnded(t0.Add(2*time.Second), 0, "r8") // concluded before GitHub named its job
	l.jobEnded(t0.Add(2*time.Second), 0, "r9")
	assert.Equal(t, 0, l.demandNow(), "three ends the figure may still count")

	// The figure comes again, same time, with job 7's completion: it no
	// longer counts job 7.
	l.ReportDemand(github.Demand{Wanted: 3, At: t0, Events: []github.JobEvent{{Kind: github.JobCompleted, JobID: 7, RunnerName: "r7"}}})
	assert.Equal(t, 1, l.demandNow(), "job 7 off once, the others' ends still off")
	l.ReportDemand(github.Demand{Wanted: 2, At: t0, Events: []github.JobEvent{{Kind: github.JobCompleted, JobID: 8, RunnerName: "r8"}}})
	assert.Equal(t, 1, l.demandNow(), "r8's job named by its runner, off once")

	l.jobEnded(t0.Add(2*time.Second), 7, "r7") // noted after its word came
	assert.Equal(t, 1, l.demandNow(), "an end whose completion a figure already told is not taken off")

	l.ReportDemand(github.Demand{Wanted: 1, At: t0.Add(3 * time.Second)})
	assert.Equal(t, 1, l.demandNow(), "a figure newer than every end (r9's)")
}
