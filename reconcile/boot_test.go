package reconcile_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// bootEnv is a scale-set policy of one runner, no spares, whose target
// cannot list its runners: the loop looks each one up every minute.
func bootEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 1).Spare(0).Active(), func(c *reconcile.Config) {
		c.RunnerListEvery = time.Minute
		c.ZombieGrace = 5 * time.Minute
	})
	e.target.cannotList = true
	return e
}

// ends lets a's runner finish its job and exit, and concludes it.
func (e *env) ends(a rm.Attempt, p *fakeProc, job int64) {
	e.t.Helper()
	e.demand(0, completed(a.RunnerName, job))
	e.target.drop(a.RunnerName)
	p.exit(0)
	e.pass()
	require.False(e.t, e.attempt(a.ID).Live())
}

// A runner found online by the minute's lookup is not a boot of a
// minute: the lookup's time is the poll's, not the runner's.
func TestBootNotFromAPoll(t *testing.T) {
	e := bootEnv(t)
	a, p := launchOne(t, e)
	e.clock.Advance(time.Minute)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(a.ID).State, "the lookup saw it online")
	require.Equal(t, 1, e.target.count("lookup"))
	e.clock.Advance(time.Second)
	e.demand(1, started(a.RunnerName, 1))
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
	e.clock.Advance(10 * time.Second)
	e.ends(a, p, 1)

	st := e.loop.Status().Policies[0]
	assert.Zero(t, st.Boot, "no boot measured: the runner showed none of its own")
	assert.NotEqual(t, time.Minute, st.Boot)
}

// A runner that takes a job waiting for it, before any lookup saw it,
// shows its boot: launch to taking the job, by GitHub's word of the take.
func TestBootFromTheRunnerTakingAJob(t *testing.T) {
	e := bootEnv(t)
	queued := e.clock.Now().Add(-time.Second)
	a, p := launchOne(t, e)
	e.clock.Advance(5 * time.Second)
	ev := started(a.RunnerName, 1)
	ev.QueuedAt, ev.AssignedAt = queued, queued
	ev.RunnerAssignedAt = a.StartedAt.Add(3 * time.Second) // GitHub handed it over at 3 s; its word came at 5 s
	e.demand(1, ev)
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
	assert.Equal(t, 3*time.Second, e.loop.Status().Policies[0].Boot, "measured when the runner showed it")
	e.clock.Advance(2 * time.Minute) // past a lookup interval: nothing polled counts
	e.pass()
	e.ends(a, p, 1)
	assert.Equal(t, 3*time.Second, e.loop.Status().Policies[0].Boot)

	// The next runner is seen online by the lookup a minute on and then
	// takes a job: its minute is no sample, and the fastest stays 3 s.
	b, q := launchOne(t, e)
	e.clock.Advance(time.Minute)
	e.pass()
	require.Equal(t, rm.StateIdle, e.attempt(b.ID).State)
	e.demand(1, started(b.RunnerName, 2))
	e.pass()
	e.ends(b, q, 2)
	assert.Equal(t, 3*time.Second, e.loop.Status().Policies[0].Boot)
}

// A job queued after the runner's launch says nothing of its boot: the
// runner may have listened long before the job came.
func TestBootNotFromALateJob(t *testing.T) {
	e := bootEnv(t)
	a, p := launchOne(t, e)
	e.clock.Advance(40 * time.Second)
	ev := started(a.RunnerName, 1)
	ev.QueuedAt = e.clock.Now().Add(-time.Second)
	e.demand(1, ev)
	e.pass()
	require.Equal(t, rm.StateBusy, e.attempt(a.ID).State)
	e.ends(a, p, 1)
	assert.Zero(t, e.loop.Status().Policies[0].Boot)
}
