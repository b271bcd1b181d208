package simulate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestListSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	job := func(queued, started, d time.Duration) fakegithub.JobRecord {
		return fakegithub.JobRecord{Status: "completed", QueuedAt: t0.Add(queued), StartedAt: t0.Add(started), CompletedAt: t0.Add(started + d)}
	}
	jobs := []fakegithub.JobRecord{
		job(0, 5*time.Second, time.Second), // how late they started does not matter
		job(0, 5*time.Second, 2*time.Second),
		job(0, 9*time.Second, time.Second),
		job(10*time.Second, 12*time.Second, time.Second), // arrives when both runners are free
		{Status: "queued", QueuedAt: t0},                 // never served: left out
	}
	assert.Equal(t, 11*time.Second, listSchedule(jobs, 2), "1 s and 2 s at once, the third after the first, the fourth at its arrival")
	assert.Equal(t, 11*time.Second, listSchedule(jobs, 4))
	assert.Equal(t, 2*time.Second, listSchedule(jobs[:3], 2))
	assert.Zero(t, listSchedule(nil, 2))
}

func TestBootBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	job := func(queued, d time.Duration) fakegithub.JobRecord {
		return fakegithub.JobRecord{Status: "completed", QueuedAt: t0.Add(queued), StartedAt: t0.Add(queued), CompletedAt: t0.Add(queued + d)}
	}
	// Four 1 s jobs at once on two runners at a time, a 2 s boot.
	backlog := []fakegithub.JobRecord{job(0, time.Second), job(0, time.Second), job(0, time.Second), job(0, time.Second)}
	for _, tc := range []struct {
		name  string
		jobs  []fakegithub.JobRecord
		ready int
		want  time.Duration
	}{
		{"none listening: all wait a boot", backlog, 0, 4 * time.Second},
		{"one listening: it runs at once, the rest after a boot", backlog, 1, 4 * time.Second},
		{"two listening: the first two at once, the next two at the boot", backlog, 2, 3 * time.Second},
		{"all listening: the list schedule", backlog, 4, 2 * time.Second},
		// A job queued after the boot waits for nothing but a runner.
		{"late arrival", []fakegithub.JobRecord{job(0, time.Second), job(5*time.Second, time.Second)}, 0, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, bootBound(tc.jobs, 2, tc.ready, 2*time.Second))
		})
	}
}

// A run cut short says what ended it: its own timeout, or what stopped its
// caller, not a bare "context deadline exceeded" that reads as the scaler
// stalling.
func TestRunPlanSaysWhatEndedIt(t *testing.T) {
	server := fakegithub.NewServer(fakegithub.WithRepo(Repo))
	defer server.Close()
	none := func() (uint64, int) { return 0, 0 }
	o := CompareOptions{Jobs: 2, Timeout: 50 * time.Millisecond}
	o.setDefaults()

	// No runner has the label: nothing is ever served.
	res, err := runPlan(t.Context(), o, server, "nobody", none)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "0 of 2 jobs served: context deadline exceeded: the run's timeout of 50ms passed", err.Error())
	assert.Zero(t, res.Served)

	stopped := errors.New("the bench was interrupted")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(stopped)
	o.Timeout = time.Hour
	_, err = runPlan(ctx, o, server, "nobody", none)
	assert.ErrorIs(t, err, stopped)
	assert.NotContains(t, err.Error(), "timeout")
}

// TestBootBoundOfTheBacklog is the reachable efficiency of the compare
// bench's backlog (its 40 jobs, max 4) by the runners free at its arrival
// and the boot, the table of docs/performance.md (go test -v prints it).
// More runners free never make it worse, a longer boot never better, and
// enough runners for every job reach the list schedule.
func TestBootBoundOfTheBacklog(t *testing.T) {
	o := CompareOptions{}
	o.setDefaults()
	t0 := time.Unix(1000, 0)
	var jobs []fakegithub.JobRecord
	var sum time.Duration
	for _, j := range o.plan("backlog") {
		jobs = append(jobs, fakegithub.JobRecord{Status: "completed", QueuedAt: t0, StartedAt: t0, CompletedAt: t0.Add(j.spec.Duration)})
		sum += j.spec.Duration
	}
	ideal := sum.Seconds() / float64(o.Max)
	list := listSchedule(jobs, o.Max)
	t.Logf("%d jobs, max %d: ideal %.2fs, best in queue order %.2fs (%.3f)", len(jobs), o.Max, ideal, list.Seconds(), ideal/list.Seconds())
	boots := []time.Duration{0, 2 * time.Second, 10 * time.Second}
	prev := make([]time.Duration, len(boots))
	for _, ready := range []int{0, 1, 2, 4, 8, 20, 27, len(jobs)} {
		line := fmt.Sprintf("ready %2d:", ready)
		for i, boot := range boots {
			b := bootBound(jobs, o.Max, ready, boot)
			line += fmt.Sprintf("  boot %-4v %.3f", boot, ideal/b.Seconds())
			assert.GreaterOrEqual(t, b, list, "a boot only delays")
			if prev[i] > 0 {
				assert.LessOrEqual(t, b, prev[i], "more runners free never make it later")
			}
			if i > 0 {
				assert.GreaterOrEqual(t, b, bootBound(jobs, o.Max, ready, boots[i-1]), "a longer boot never makes it sooner")
			}
			prev[i] = b
		}
		t.Log(line)
	}
	assert.Equal(t, list, bootBound(jobs, o.Max, len(jobs), 10*time.Second))
}
