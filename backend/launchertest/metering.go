package launchertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

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
