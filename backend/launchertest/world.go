package launchertest

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	gogh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// The fake GitHub's repository and token.
const (
	owner = "octo"
	repo  = "launchers"
	token = "ghp_launchertest"
)

// world is one subtest's: a fake GitHub, its REST client, a data
// directory, the spec every launch starts from.
type world struct {
	h       Harness
	gh      *fakegithub.Server
	api     *gogh.Client
	dataDir string
	base    rm.LaunchSpec
}

func newWorld(t *testing.T, h Harness) *world {
	t.Helper()
	gh := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo(owner+"/"+repo))
	api, err := gogh.NewClient(gogh.WithHTTPClient(gh.Client()), gogh.WithAuthToken(token),
		gogh.WithEnterpriseURLs(gh.APIURL(), gh.APIURL()))
	require.NoError(t, err)
	var base rm.LaunchSpec
	if h.Prepare != nil {
		base = h.Prepare(t)
	}
	return &world{h: h, gh: gh, api: api, dataDir: t.TempDir(), base: base}
}

// runner is an attempt's registered runner: a classic runner whose own
// label is its name, so that a job can be given to it alone.
type runner struct {
	spec rm.LaunchSpec
	name string
	id   int64 // GitHub's
}

// runner registers a runner for a new attempt and returns its spec.
func (w *world) runner(t *testing.T) runner {
	t.Helper()
	a := rm.NewAttemptID()
	name := "lt-" + a.String()
	jit, _, err := w.api.Actions.GenerateRepoJITConfig(t.Context(), owner, repo, &gogh.GenerateJITConfigRequest{
		Name: name, RunnerGroupID: 1, Labels: []string{"self-hosted", name}})
	require.NoError(t, err)
	spec := w.base
	spec.Attempt = a
	spec.JITConfig = jit.GetEncodedJITConfig()
	spec.Env = slices.Clone(w.base.Env)
	return runner{spec: spec, name: name, id: jit.GetRunner().GetID()}
}

// launch launches r's attempt with l and arranges for what is left of it
// to be cleaned when the test ends, whatever the test found.
func (w *world) launch(t *testing.T, l rm.Launcher, r runner) rm.Process {
	t.Helper()
	p, err := l.Launch(t.Context(), r.spec)
	require.NoError(t, err, "launch")
	require.NotNil(t, p)
	w.cleanAtEnd(t, l, r.spec.Attempt, p.PID(), p.Start())
	return p
}

// cleanAtEnd cleans the attempt when the test ends, and kills its runner
// if that left it running.
func (w *world) cleanAtEnd(t *testing.T, l rm.Launcher, a rm.AttemptID, pid int, start uint64) {
	t.Cleanup(func() {
		_ = l.Cleanup(a, false)
		if pid > 0 && platform.Alive(pid, start) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
}

// job queues a job that only r's runner takes.
func (w *world) job(r runner, spec fakegithub.JobSpec) int64 {
	spec.Repo = owner + "/" + repo
	spec.Labels = []string{"self-hosted", r.name}
	return w.gh.EnqueueJob(spec)
}

// waitFor waits up to within for cond, a look at the fake GitHub.
func (w *world) waitFor(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	require.NoError(t, w.gh.WaitFor(ctx, cond), "waiting %v for %s", within, what)
}

// online waits for r's runner to poll GitHub.
func (w *world) online(t *testing.T, r runner) {
	t.Helper()
	w.waitFor(t, w.h.Boot, func() bool {
		for _, rr := range w.gh.Runners() {
			if rr.Name == r.name {
				return rr.Online
			}
		}
		return false
	}, "runner "+r.name+" to be online")
}

// started waits for job to run.
func (w *world) started(t *testing.T, job int64) {
	t.Helper()
	w.waitFor(t, w.h.Boot, func() bool {
		rec, ok := w.gh.Job(job)
		return ok && rec.Status != "queued"
	}, "the job to start")
}

// completedBy checks that job completed, run once by r's runner.
func (w *world) completedBy(t *testing.T, job int64, r runner) {
	t.Helper()
	rec, ok := w.gh.Job(job)
	require.True(t, ok)
	assert.Equal(t, "completed", rec.Status)
	assert.Equal(t, r.name, rec.RunnerName, "the attempt's runner ran the job")
	assert.Equal(t, 1, rec.Starts, "the job ran once")
}

// waitDone waits up to within for p's exit.
func waitDone(t *testing.T, p rm.Process, within time.Duration, what string) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatalf("%s (pid %d) did not exit within %v", what, p.PID(), within)
	}
}

// running checks that p runs: its Done open, its (PID, Start) alive, no
// exit code yet.
func running(t *testing.T, p rm.Process) {
	t.Helper()
	select {
	case <-p.Done():
		t.Fatalf("Done is closed while the runner (pid %d) runs", p.PID())
	default:
	}
	assert.True(t, platform.Alive(p.PID(), p.Start()), "(pid %d, start %d) is alive", p.PID(), p.Start())
	assert.Equal(t, -1, p.ExitCode(), "no exit code while the runner runs")
}

// gone checks that nothing is left of attempt a at l: no process
// (pid, start), no trace for RanJob, no root in Roots, no group, and
// nothing Harness.Remains names.
func (w *world) gone(t *testing.T, l rm.Launcher, a rm.AttemptID, pid int, start uint64) {
	t.Helper()
	if pid > 0 {
		assert.Eventually(t, func() bool { return !platform.Alive(pid, start) }, 10*time.Second, 20*time.Millisecond,
			"the runner (pid %d) is gone", pid)
	}
	assert.False(t, l.RanJob(a), "no trace of a job once the attempt is cleaned")
	if rl, ok := l.(rm.RootLister); ok {
		roots, err := rl.Roots()
		require.NoError(t, err)
		assert.NotContains(t, roots, a, "Roots lists a cleaned attempt")
	}
	if gm, ok := l.(rm.GroupMeter); ok {
		_, ok := gm.GroupUsage(a)
		assert.False(t, ok, "the cleaned attempt's group is gone")
	}
	if w.h.Remains != nil {
		assert.Empty(t, w.h.Remains(t, l, a), "what the launcher holds of the cleaned attempt")
	}
}
