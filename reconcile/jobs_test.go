package reconcile_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
)

// TestJobsViewNamesWaitingAndRunningJobs: the jobs a source lists as
// pending show as waiting, with the policy that will serve them and why
// they wait; a job a runner of the loop took shows as running on its
// attempt, even while the source still lists it (its word lags); a figure
// that lists nothing leaves the list standing; a watch that cannot reach
// GitHub says so on each waiting job.
func TestJobsViewNamesWaitingAndRunningJobs(t *testing.T) {
	e := newEnv(t, nil, nil)
	t0 := e.clock.Now()
	pending := func(n int64, assigned bool) rm.PendingJob {
		return rm.PendingJob{ID: jobKey(n), RunID: n * 10, Repository: "acme/repo", Workflow: "ci.yml", Name: "build",
			Labels: []string{"home"}, Assigned: assigned, QueuedAt: t0.Add(time.Duration(n) * time.Second)}
	}
	list := []rm.PendingJob{pending(1, true), pending(2, true), pending(3, false), pending(4, false), pending(5, false)}
	e.loop.ReportDemand(rm.Demand{Wanted: 2, Queued: 3, Pending: list, PendingListed: true, At: e.clock.Now()})
	e.pass()

	st := e.loop.Status()
	require.Len(t, st.Jobs, 5)
	for i, j := range st.Jobs {
		assert.Equal(t, jobKey(int64(i+1)), j.ID, "oldest first")
		assert.True(t, j.Waiting())
		assert.Equal(t, e.policy.Name, j.PolicyName)
		assert.Equal(t, e.policy.ID, j.Policy)
		assert.Equal(t, "at max 2", j.WaitReason, "the policy's own reason")
		assert.Equal(t, "acme/repo", j.Repository)
	}
	assert.Equal(t, status.JobAssignedToTarget, st.Jobs[0].State)
	assert.Equal(t, status.JobQueued, st.Jobs[4].State)

	// A runner takes job 1; the source's next figure still lists it.
	live := e.live()
	require.Len(t, live, 2)
	e.loop.ReportDemand(rm.Demand{Wanted: 2, Queued: 3, Events: []rm.JobEvent{started(live[0].RunnerName, 1)},
		Pending: list, PendingListed: true, At: e.clock.Now()})
	e.pass()
	st = e.loop.Status()
	require.Len(t, st.Jobs, 5)
	run := st.Jobs[0]
	assert.Equal(t, status.JobRunning, run.State)
	assert.Equal(t, jobKey(1), run.ID)
	assert.Equal(t, live[0].ID, run.Attempt)
	assert.Equal(t, live[0].RunnerName, run.RunnerName)
	assert.Empty(t, run.WaitReason)
	for _, j := range st.Jobs[1:] {
		assert.NotEqual(t, jobKey(1), j.ID, "a job a runner holds is not also waiting")
		assert.True(t, j.Waiting())
	}

	// A figure that lists nothing (a nudge) keeps the list.
	e.loop.ReportDemand(rm.Demand{Wanted: 2, Queued: 3, At: e.clock.Now()})
	e.pass()
	assert.Len(t, e.loop.Status().Jobs, 5)

	// Counted and named, per target.
	waits := e.loop.Status().Waits()
	require.Len(t, waits, 1)
	assert.Equal(t, e.policy.Target.String(), waits[0].Target)
	assert.Equal(t, 4, waits[0].Named)
	assert.GreaterOrEqual(t, waits[0].Waiting, 4)

	// GitHub out of reach: the waiting jobs say so, the running one not.
	e.target.mu.Lock()
	e.target.waitErr = errors.New("GitHub refused the credentials")
	e.target.waitSince = e.clock.Now()
	e.target.mu.Unlock()
	for _, j := range e.loop.Status().Jobs {
		if j.Waiting() {
			assert.Contains(t, j.WaitReason, "GitHub unavailable since")
		} else {
			assert.Empty(t, j.WaitReason)
		}
	}
	e.target.mu.Lock()
	e.target.waitErr = nil
	e.target.mu.Unlock()

	// An empty list is a list: nothing waits by name any more.
	e.loop.ReportDemand(rm.Demand{Wanted: 1, PendingListed: true, At: e.clock.Now()})
	e.pass()
	for _, j := range e.loop.Status().Jobs {
		assert.False(t, j.Waiting(), "only the running job is left")
	}
}

// TestJobsViewUnmatched: jobs no policy matches are shown once, with no
// policy and the labels that matched nothing.
func TestJobsViewUnmatched(t *testing.T) {
	e := newEnv(t, nil, nil)
	odd := rm.PendingJob{ID: "77", Number: 77, Repository: "acme/repo", Name: "gpu", Labels: []string{"self-hosted", "gpu"}, QueuedAt: e.clock.Now()}
	e.loop.ReportDemand(rm.Demand{PendingListed: true, Unmatched: []rm.PendingJob{odd}, At: e.clock.Now()})
	e.pass()
	jobs := e.loop.Status().Jobs
	require.Len(t, jobs, 1)
	assert.Equal(t, status.JobUnmatched, jobs[0].State)
	assert.True(t, jobs[0].Policy.IsZero())
	assert.Equal(t, "no policy here matches [self-hosted, gpu]", jobs[0].WaitReason)
	assert.Empty(t, e.loop.Status().Waits(), "no target waits for it")
}

// TestJobStartFigures: a job a runner of the loop takes is split into
// GitHub's part, the manager's and the runner's, told to OnJobStarted,
// journaled with the job, and counted in the policy's figures of the last
// hour; its end is told to OnJobEnded once, however often GitHub says it.
func TestJobStartFigures(t *testing.T) {
	var (
		starts []rm.StartSplit
		ends   []time.Duration
	)
	e := newEnv(t, nil, func(c *reconcile.Config) {
		c.OnJobStarted = func(policy string, s rm.StartSplit) { starts = append(starts, s) }
		c.OnJobEnded = func(policy, result string, ran time.Duration) { ends = append(ends, ran) }
	})
	queued := e.clock.Now()
	assigned := queued.Add(40 * time.Millisecond)
	e.clock.Advance(50 * time.Millisecond)
	e.demand(1)
	e.pass()
	live := e.live()
	require.Len(t, live, 1)
	e.clock.Advance(2 * time.Second) // the runner boots, and GitHub hands it the job
	ev := started(live[0].RunnerName, 1)
	ev.QueuedAt, ev.AssignedAt, ev.RunnerAssignedAt = queued, assigned, e.clock.Now()
	e.demand(1, ev)
	e.pass()

	require.Len(t, starts, 1)
	s := starts[0]
	assert.Equal(t, 40*time.Millisecond, s.Assign, "GitHub's part")
	assert.Equal(t, e.clock.Now().Sub(queued), s.Total())
	a := e.attempt(live[0].ID)
	assert.True(t, a.Job.QueuedAt.Equal(queued), "the job's queue time is journaled")
	assert.True(t, a.Job.AssignedAt.Equal(assigned))
	js := e.loop.Status().Policies[0].JobStart
	assert.Equal(t, 1, js.Jobs)
	assert.Equal(t, s.Total(), js.P50)
	assert.Equal(t, s.Total(), js.P95)
	assert.Equal(t, s.Ready, js.OursP50)

	done := completed(live[0].RunnerName, 1)
	done.RunnerAssignedAt, done.FinishedAt = ev.RunnerAssignedAt, ev.RunnerAssignedAt.Add(90*time.Second)
	e.demand(0, done)
	e.pass()
	e.demand(0, done)
	e.pass()
	assert.Equal(t, []time.Duration{90 * time.Second}, ends, "once")

	// An hour on, the figures are of the last hour: none.
	e.clock.Advance(time.Hour + time.Minute)
	e.pass()
	assert.Zero(t, e.loop.Status().Policies[0].JobStart.Jobs)
}
