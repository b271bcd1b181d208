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

// launchOne makes a launcher and launches one runner with it, for a job
// of spec queued first (none when nil).
func (w *world) launchOne(t *testing.T, spec *fakegithub.JobSpec) (rm.Launcher, runner, rm.Process, int64) {
	t.Helper()
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	var job int64
	if spec != nil {
		job = w.job(r, *spec)
	}
	return l, r, w.launch(t, l, r), job
}

// afterJob waits for the exit of p, whose runner was given a job.
func (w *world) afterJob(t *testing.T, p rm.Process) {
	t.Helper()
	waitDone(t, p, w.h.Boot+time.Minute, "the runner after its job")
}

func testLaunch(t *testing.T, w *world) {
	l, r, p, job := w.launchOne(t, &fakegithub.JobSpec{Duration: jobTime})
	require.Positive(t, p.PID(), "the runner is named by a process of this host")
	start, err := platform.StartTime(p.PID())
	require.NoError(t, err)
	assert.Equal(t, start, p.Start(), "Start is the stamp platform.StartTime reads")

	w.started(t, job)
	running(t, p)
	w.afterJob(t, p)
	assert.Equal(t, 0, p.ExitCode(), "one job done: the listener's exit code")
	assert.False(t, platform.Alive(p.PID(), p.Start()), "Done is closed once the runner exited")
	w.completedBy(t, job, r)
	assert.True(t, l.RanJob(r.spec.Attempt), "the runner's own trace says it ran a job")
	require.NoError(t, l.Cleanup(r.spec.Attempt, false))
}

func testIdleExit(t *testing.T, w *world) {
	l, r, p, _ := w.launchOne(t, nil)
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
	l, r, p, _ := w.launchOne(t, nil)
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
	l, r, p, _ := w.launchOne(t, &fakegithub.JobSpec{Duration: 100 * time.Millisecond})
	w.afterJob(t, p)
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
	w.afterJob(t, p)
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

// meterAlloc is what the metered job allocates and touches.
const meterAlloc = 64 << 20

// usageSeen is the most a runner's meters saw while it ran.
type usageSeen struct {
	tree, group uint64 // bytes
	cpu         time.Duration
	looks       int // GroupUsage answers
}

// meter samples, as the meters do, the process tree under p's PID and,
// for a GroupMeter, the attempt's group, until p exits.
func meter(t *testing.T, l rm.Launcher, a rm.AttemptID, p rm.Process, within time.Duration) usageSeen {
	t.Helper()
	gm, grouped := l.(rm.GroupMeter)
	var u usageSeen
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for {
		if s, ok := platform.SampleTrees([]int{p.PID()})[p.PID()]; ok {
			u.tree = max(u.tree, s.RSSBytes)
		}
		if grouped {
			if g, ok := gm.GroupUsage(a); ok {
				u.looks++
				u.group, u.cpu = max(u.group, g.MemoryBytes), max(u.cpu, g.CPUTime)
			}
		}
		select {
		case <-p.Done():
			return u
		case <-deadline:
			t.Fatalf("the runner (pid %d) did not exit within %v", p.PID(), within)
		case <-tick.C:
		}
	}
}

func testMetering(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	r := w.runner(t)
	a := r.spec.Attempt
	mc, contains := l.(rm.MemoryContainer)
	const limit = 512 << 20
	limited := contains && mc.SetMemoryLimit(a, limit) == nil
	job := w.job(r, fakegithub.JobSpec{Duration: jobTime, MemoryBytes: meterAlloc})
	p := w.launch(t, l, r)
	w.started(t, job)
	gm, grouped := l.(rm.GroupMeter)
	if grouped {
		run, known := gm.RunnerRunning(a, p.PID(), p.Start())
		assert.True(t, known && run, "RunnerRunning: the launcher watches the runner it launched, and it runs")
		_, known = gm.RunnerRunning(a, p.PID(), p.Start()+1)
		assert.False(t, known, "another start stamp is not the attempt's runner")
	}
	u := meter(t, l, a, p, w.h.Boot+time.Minute)
	t.Logf("peaks seen: process tree %d MiB; group %d MiB, CPU %v over %d looks", u.tree>>20, u.group>>20, u.cpu, u.looks)
	assert.GreaterOrEqual(t, u.tree, uint64(meterAlloc), "the process tree under PID holds the job's memory")
	if grouped {
		if in := gm.CgroupsInUse(); in != "" {
			require.Positive(t, u.looks, "the attempt's group (%s) is read while it runs", in)
			assert.GreaterOrEqual(t, u.group, uint64(meterAlloc), "the group holds the job's memory")
			assert.Positive(t, u.cpu, "the group's CPU time")
		} else {
			t.Log("GroupMeter without groups here (CgroupsInUse is empty): metered from the process tree")
		}
		run, known := gm.RunnerRunning(a, p.PID(), p.Start())
		assert.True(t, known && !run, "RunnerRunning: the launcher saw its runner's exit")
	}
	if contains {
		if m, ok := mc.GroupMemory(a); ok {
			t.Logf("the kernel's word at the end: %+v", m)
			assert.Zero(t, m.OOMKills, "no OOM kill under the limit")
			if limited {
				assert.Equal(t, uint64(limit), m.LimitBytes, "the limit set before the launch")
			}
			if m.PeakBytes > 0 {
				assert.GreaterOrEqual(t, m.PeakBytes, uint64(meterAlloc), "the peak holds the job's memory")
			}
		}
	}
	require.NoError(t, l.Cleanup(a, false))
	w.gone(t, l, a, p.PID(), p.Start())
}

func testMemoryLimit(t *testing.T, w *world) {
	l := w.h.New(t, w.dataDir)
	mc, ok := l.(rm.MemoryContainer)
	if !ok {
		t.Skip("not a MemoryContainer: the launcher limits no attempt's memory")
	}
	r := w.runner(t)
	a := r.spec.Attempt
	const limit = 256 << 20
	if err := mc.SetMemoryLimit(a, limit); err != nil {
		t.Skipf("no memory limit here: %v", err)
	}
	w.job(r, fakegithub.JobSpec{Duration: jobTime, MemoryBytes: 2 * limit})
	p := w.launch(t, l, r)
	waitDone(t, p, w.h.Boot+time.Minute, "the runner whose job goes over its limit")
	assert.NotEqual(t, 0, p.ExitCode(), "the runner was killed")
	m, ok := mc.GroupMemory(a)
	require.True(t, ok, "the kernel's word on an attempt with a limit")
	t.Logf("the kernel's word at the end: %+v, exit code %d", m, p.ExitCode())
	assert.Positive(t, m.OOMKills, "the OOM kill is reported")
	assert.Equal(t, uint64(limit), m.LimitBytes)
	if m.PeakBytes > 0 {
		assert.GreaterOrEqual(t, m.PeakBytes, uint64(limit-16<<20), "the peak reached the limit")
	}
	require.NoError(t, l.Cleanup(a, true), "a failed attempt's cleanup")
	w.gone(t, l, a, p.PID(), p.Start())
}
