package launchertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// jobTime is how long the suite's jobs work: long enough to be seen
// running under a loaded CPU.
const jobTime = 3 * time.Second

func testLaunch(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	job := w.job(r, fakegithub.JobSpec{Duration: jobTime})
	p := w.launch(t, l, r)
	require.Positive(t, p.PID(), "the runner is named by a process of this host")
	start, err := platform.StartTime(p.PID())
	require.NoError(t, err)
	assert.Equal(t, start, p.Start(), "Start is the stamp platform.StartTime reads")

	w.started(t, job)
	running(t, p)
	waitDone(t, p, w.h.Boot+time.Minute, "the runner after its job")
	assert.Equal(t, 0, p.ExitCode(), "one job done: the listener's exit code")
	assert.False(t, platform.Alive(p.PID(), p.Start()), "Done is closed once the runner exited")
	w.completedBy(t, job, r)
	assert.True(t, l.RanJob(r.spec.Attempt), "the runner's own trace says it ran a job")
	require.NoError(t, l.Cleanup(r.spec.Attempt, false))
}

func testIdleExit(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	p := w.launch(t, l, r)
	w.online(t, r)
	running(t, p)
	_, err := w.api.Actions.RemoveRunner(t.Context(), owner, repo, r.id)
	require.NoError(t, err)
	waitDone(t, p, w.h.Boot, "an idle runner whose registration was removed")
	assert.Equal(t, 0, p.ExitCode(), "the listener exits 0 when its registration goes while it is idle")
	assert.False(t, l.RanJob(r.spec.Attempt), "an idle runner ran no job")
	require.NoError(t, l.Cleanup(r.spec.Attempt, false))
}

// testStop stops an idle runner, then one adopted by a second launcher
// over the same data directory (the first dropped, as after a restart).
func testStop(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	p := w.launch(t, l, r)
	w.online(t, r)
	w.stop(t, l, r, p)

	r = w.runner(t)
	p = w.launch(t, l, r)
	w.online(t, r)
	again := w.h.New(t, w.dataDir)
	adopted, err := again.Adopt(r.spec.Attempt, p.PID(), p.Start())
	require.NoError(t, err)
	w.stop(t, again, r, adopted)
}

// stop stops r's runner p, checks it exited, and cleans its attempt.
func (w *world) stop(t *testing.T, l rm.Launcher, r runner, p rm.Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), w.h.Boot)
	defer cancel()
	require.NoError(t, p.Stop(ctx, 10*time.Second))
	assert.False(t, platform.Alive(p.PID(), p.Start()), "Stop returns once the runner exited")
	waitDone(t, p, 5*time.Second, "the stopped runner")
	assert.False(t, l.RanJob(r.spec.Attempt), "a runner stopped idle ran no job")
	assert.NoError(t, p.Stop(ctx, time.Second), "stopping an exited runner is a no-op")
	require.NoError(t, l.Cleanup(r.spec.Attempt, false))
	w.gone(t, l, r.spec.Attempt, p.PID(), p.Start())
}

func testCleanup(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	w.job(r, fakegithub.JobSpec{Duration: 100 * time.Millisecond})
	p := w.launch(t, l, r)
	waitDone(t, p, w.h.Boot+time.Minute, "the runner after its job")
	a := r.spec.Attempt
	require.True(t, l.RanJob(a))
	require.NoError(t, l.Cleanup(a, false))
	w.gone(t, l, a, p.PID(), p.Start())
	assert.NoError(t, l.Cleanup(a, false), "cleaning up twice is harmless")

	never := rm.NewAttemptID()
	assert.NoError(t, l.Cleanup(never, false), "an attempt never launched is clean")
	assert.False(t, l.RanJob(never), "an attempt never launched ran no job")
	assert.False(t, l.RanJob(rm.AttemptID{}))
	_, err := l.Adopt(never, 0, 0)
	assert.ErrorIs(t, err, rm.ErrProcessGone, "an attempt without a pid has nothing to adopt")
}

// testLeftovers runs a job that leaves three processes behind (one in
// the background, one in a session of its own, one double-forked, init's
// child) and checks that none runs on this host after Cleanup.
func testLeftovers(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	_, contains := l.(rm.MemoryContainer)
	if _, ok := l.(rm.GroupMeter); !ok && !contains {
		t.Skip("the launcher holds its attempts in no group (neither MemoryContainer nor GroupMeter): what a job leaves is not its to end")
	}
	r := w.runner(t)
	mark := marker()
	job := w.job(r, fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: leaveBehind(mark)})
	p := w.launch(t, l, r)
	waitDone(t, p, w.h.Boot+time.Minute, "the runner after its job")
	w.completedBy(t, job, r)
	w.leftoversEnd(t, l, r.spec.Attempt, mark)
	w.gone(t, l, r.spec.Attempt, p.PID(), p.Start())
}

// leaveBehind is a job's step that leaves three processes running
// `sleep mark`: in its background, in a session of its own, and
// double-forked (its parent gone).
func leaveBehind(mark string) string {
	sleep := "sleep " + mark + " </dev/null >/dev/null 2>&1"
	return sleep + " &\nsetsid " + sleep + " &\nsh -c '" + sleep + " &' &\n"
}

// leftoversEnd cleans attempt a, whose job left processes running
// `sleep mark`, and checks that none runs afterwards: where jobs run on
// this host (Harness.JobsOnHost) it first requires seeing all three.
func (w *world) leftoversEnd(t *testing.T, l rm.Launcher, a rm.AttemptID, mark string) {
	t.Helper()
	left := sleepers(mark)
	t.Cleanup(func() { killAll(sleepers(mark)) })
	if w.h.JobsOnHost {
		require.Eventually(t, func() bool { left = sleepers(mark); return len(left) == 3 }, 10*time.Second, 20*time.Millisecond,
			"the job's three processes outlive its runner (found %d)", len(left))
	}
	t.Logf("%d processes of the job ran on this host after its runner's exit", len(left))
	require.NoError(t, l.Cleanup(a, false))
	for _, pr := range left {
		assert.False(t, platform.Alive(pr.pid, pr.start), "pid %d the job left is alive after Cleanup", pr.pid)
	}
	assert.Empty(t, sleepers(mark), "no process of the job runs after Cleanup")
}
