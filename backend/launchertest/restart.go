package launchertest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// childEnv names the order file of the test's child that launches
// runners and is killed with SIGKILL: a daemon killed mid-run.
const childEnv = "RUNNER_MANAGER_LAUNCHERTEST_CHILD"

// childOrder is what the child launches, and where it says so.
type childOrder struct {
	DataDir string
	Specs   []rm.LaunchSpec
	Out     string
}

// launched is a runner as the journal holds it: what Adopt is given.
type launched struct {
	Attempt rm.AttemptID
	PID     int
	Start   uint64
}

// runChild is the child's side: launch what the order says, write the
// runners' (pid, start), and wait to be killed.
func runChild(t *testing.T, h Harness, orderFile string) {
	b, err := os.ReadFile(orderFile)
	require.NoError(t, err)
	var o childOrder
	require.NoError(t, json.Unmarshal(b, &o))
	l := h.New(t, o.DataDir)
	var out []launched
	for _, s := range o.Specs {
		p, err := l.Launch(context.Background(), s)
		require.NoError(t, err, "launch in the child")
		out = append(out, launched{Attempt: s.Attempt, PID: p.PID(), Start: p.Start()})
	}
	b, err = json.Marshal(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(o.Out+".tmp", b, 0o600))
	require.NoError(t, os.Rename(o.Out+".tmp", o.Out))
	time.Sleep(time.Hour) // until the parent kills it
}

// launchInChild launches rs from a child of the test (this test binary,
// running this subtest alone), with a launcher the child makes over the
// world's data directory, then kills the child with SIGKILL: the runners
// are left as a daemon's kill -9 leaves them.
func (w *world) launchInChild(t *testing.T, rs ...runner) map[rm.AttemptID]launched {
	t.Helper()
	dir := t.TempDir()
	o := childOrder{DataDir: w.dataDir, Out: filepath.Join(dir, "launched.json")}
	for _, r := range rs {
		o.Specs = append(o.Specs, r.spec)
	}
	b, err := json.Marshal(o)
	require.NoError(t, err)
	orderFile := filepath.Join(dir, "order.json")
	require.NoError(t, os.WriteFile(orderFile, b, 0o600)) // it holds JIT configurations
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), childEnv+"="+orderFile)
	out := &childLog{path: filepath.Join(dir, "child.log")}
	logFile, err := os.Create(out.path)
	require.NoError(t, err)
	defer logFile.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("the killed launcher's process said:\n%s", out.String())
		}
	})
	deadline := time.After(w.h.Boot + time.Minute)
	for {
		if b, err := os.ReadFile(o.Out); err == nil {
			var ls []launched
			require.NoError(t, json.Unmarshal(b, &ls))
			require.NoError(t, cmd.Process.Kill(), "kill -9 the launcher's process")
			<-exited
			at := map[rm.AttemptID]launched{}
			for _, l := range ls {
				at[l.Attempt] = l
			}
			return at
		}
		select {
		case err := <-exited:
			t.Fatalf("the launcher's process exited (%v) before it launched:\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("the launcher's process did not launch within %v:\n%s", w.h.Boot+time.Minute, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// testRestart plays a daemon killed with SIGKILL while three runners run,
// and its start again over the same data directory: one runner is live in
// the journal, one ended while no daemon ran, one the journal never knew
// (killed between its launch and its record).
func testRestart(t *testing.T, w *world) {
	live, ended, unknown := w.runner(t), w.runner(t), w.runner(t)
	at := w.launchInChild(t, live, ended, unknown)
	l := w.h.New(t, w.dataDir)
	for _, r := range []runner{live, ended, unknown} {
		pr, ok := at[r.spec.Attempt]
		require.True(t, ok)
		w.cleanAtEnd(t, l, pr.Attempt, pr.PID, pr.Start)
		require.True(t, platform.Alive(pr.PID, pr.Start), "runner %s outlived its launcher's kill -9", r.name)
	}
	job := w.job(ended, fakegithub.JobSpec{Duration: 100 * time.Millisecond})
	w.waitFor(t, w.h.Boot+time.Minute, func() bool { rec, _ := w.gh.Job(job); return rec.Status == "completed" },
		"the job of the runner that ends while no daemon runs")
	e := at[ended.spec.Attempt]
	require.Eventually(t, func() bool { return !platform.Alive(e.PID, e.Start) }, w.h.Boot, 20*time.Millisecond,
		"the runner that ran its job exits")

	isLive := func(a rm.AttemptID) bool { return a == live.spec.Attempt || a == ended.spec.Attempt }
	w.sweep(t, l, isLive, at[unknown.spec.Attempt])
	lv := at[live.spec.Attempt]
	require.True(t, platform.Alive(lv.PID, lv.Start), "what the journal holds live is not swept")

	_, err := l.Adopt(e.Attempt, e.PID, e.Start)
	require.ErrorIs(t, err, rm.ErrProcessGone, "a runner that ended while no daemon ran is gone")
	assert.True(t, l.RanJob(e.Attempt), "its trace says it ran a job, read by a launcher that never ran it")
	require.NoError(t, l.Cleanup(e.Attempt, false))
	w.gone(t, l, e.Attempt, e.PID, e.Start)

	w.adopt(t, l, live, lv)
}

// sweep does what a daemon's start does to what no live attempt owns:
// RemoveLeftovers, then a Cleanup of each root Roots lists that is not
// live; then checks that nothing is left of the unknown attempt.
func (w *world) sweep(t *testing.T, l rm.Launcher, live func(rm.AttemptID) bool, unknown launched) {
	t.Helper()
	lr, removes := l.(rm.LeftoverRemover)
	rl, lists := l.(rm.RootLister)
	if !removes && !lists {
		t.Log("neither a LeftoverRemover nor a RootLister: an attempt the journal never knew is left to `doctor --fix`")
		return
	}
	if lists {
		roots, err := rl.Roots()
		require.NoError(t, err)
		assert.Contains(t, roots, unknown.Attempt, "Roots lists the root of an attempt the journal never knew")
	}
	if removes {
		require.NoError(t, lr.RemoveLeftovers(t.Context(), live))
	}
	if lists {
		roots, err := rl.Roots()
		require.NoError(t, err)
		for _, a := range roots {
			if !live(a) {
				require.NoError(t, l.Cleanup(a, false), "the sweep's Cleanup of %s, never watched by this launcher", a)
			}
		}
	}
	w.gone(t, l, unknown.Attempt, unknown.PID, unknown.Start)
}

// adopt adopts r's runner, launched before the restart as pr, checks it
// is watched and metered on, and sees its exit after a job.
func (w *world) adopt(t *testing.T, l rm.Launcher, r runner, pr launched) {
	t.Helper()
	a := r.spec.Attempt
	_, err := l.Adopt(a, pr.PID, pr.Start+1)
	require.ErrorIs(t, err, rm.ErrProcessGone, "another start stamp under the same pid is another process")
	p, err := l.Adopt(a, pr.PID, pr.Start)
	require.NoError(t, err)
	assert.Equal(t, pr.PID, p.PID())
	assert.Equal(t, pr.Start, p.Start())
	running(t, p)
	if gm, ok := l.(rm.GroupMeter); ok {
		run, known := gm.RunnerRunning(a, pr.PID, pr.Start)
		assert.True(t, known && run, "RunnerRunning: the launcher watches the runner it adopted, and it runs")
		if in := gm.CgroupsInUse(); in != "" {
			_, ok := gm.GroupUsage(a)
			assert.True(t, ok, "the adopted attempt is metered on from its group (%s)", in)
		}
	}
	mark := marker()
	job := w.job(r, fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: leaveBehind(mark)})
	w.afterJob(t, p)
	assert.Contains(t, []int{0, -1}, p.ExitCode(), "the listener's code, or -1 where the OS gives it only to its parent")
	w.completedBy(t, job, r)
	assert.True(t, l.RanJob(a), "the adopted runner's trace says it ran a job")
	w.leftoversEnd(t, l, a, mark) // what the job left, ended by a launcher that did not launch it
	w.gone(t, l, a, pr.PID, pr.Start)
}

// childLog is the killed launcher's process's output, in a file.
type childLog struct{ path string }

func (c *childLog) String() string {
	b, _ := os.ReadFile(c.path)
	return string(b)
}
