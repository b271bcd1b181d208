package reconcile_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestHungAfterItsJob runs the loop's own driver in virtual time: a runner
// whose job GitHub said completed lives on; within HungGrace it is left
// alone, at the grace (the pass's own deadline wakes the loop: the active
// requeue is far later) its registration is removed and its tree stopped,
// one warning says why, and it concludes CompletedJob with the reason. Its
// slot serves the next job.
func TestHungAfterItsJob(t *testing.T) {
	const grace = 90 * time.Second
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.HungGrace = grace
	})
	synctest.Test(t, func(t *testing.T) {
		cfg := e.cfg
		cfg.Now = time.Now
		cfg.ActiveRequeue, cfg.IdleRequeue = 30*time.Minute, 30*time.Minute
		loop, stop := runLoop(t, cfg)
		loop.ReportDemand(rm.Demand{Wanted: 1, At: time.Now()})
		synctest.Wait()
		live := e.live()
		require.Len(t, live, 1)
		a := live[0]
		p := e.launcher.proc(a.ID)
		require.NotNil(t, p)
		e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })

		time.Sleep(time.Second)
		loop.ReportDemand(rm.Demand{Wanted: 1, At: time.Now(), Events: []rm.JobEvent{started(a.RunnerName, 7)}})
		synctest.Wait()
		require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
		time.Sleep(10 * time.Second)
		loop.ReportDemand(rm.Demand{Wanted: 0, At: time.Now(), Events: []rm.JobEvent{completed(a.RunnerName, 7)}})
		synctest.Wait()

		time.Sleep(grace - time.Second)
		synctest.Wait()
		assert.False(t, p.wasStopped(), "within the grace")
		assert.True(t, e.target.has(a.RunnerName))
		assert.NotContains(t, e.logs.String(), "hung after its job")

		time.Sleep(time.Second)
		synctest.Wait()
		require.True(t, p.wasStopped(), "stopped at the grace")
		assert.False(t, e.target.has(a.RunnerName), "its registration is removed")
		got := e.attempt(a.ID)
		assert.Equal(t, rm.StateFinished, got.State)
		assert.Equal(t, rm.CompletedJob, got.Outcome.Kind, got.Outcome.String())
		assert.Equal(t, "stopped: hung after its job ended", got.Outcome.Detail)
		assert.Equal(t, jobKey(7), got.Job.ID)
		o, ok := e.meters.endedWith(a.ID)
		assert.True(t, ok && o.Kind == rm.CompletedJob, "its weight counts")
		assert.Equal(t, 1, strings.Count(e.logs.String(), "runner hung after its job ended"), "one warning")

		loop.ReportDemand(rm.Demand{Wanted: 1, At: time.Now()})
		synctest.Wait()
		live = e.live()
		require.Len(t, live, 1, "the slot serves the next job")
		assert.NotEqual(t, a.ID, live[0].ID)
		stop()
	})
}

// TestNoJobWordNoHang: a busy runner GitHub said nothing more of is never
// stopped as hung, however long its job runs.
func TestNoJobWordNoHang(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.HungGrace = time.Minute
	})
	a, p := launchOne(t, e)
	e.demand(1, started(a.RunnerName, 5))
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
	e.passes(10*time.Minute, 10*time.Second)
	assert.False(t, p.wasStopped())
	e.demand(0, completed(a.RunnerName, 5))
	e.pass()
	e.passes(50*time.Second, 10*time.Second)
	assert.False(t, p.wasStopped(), "within the grace of its job's end")
	e.passes(10*time.Second, 10*time.Second)
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond)
	assert.Equal(t, "stopping: hung after its job ended", e.attempt(a.ID).LastMessage)
}
