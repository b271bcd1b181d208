package reconcile_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
)

// hookLauncher is the fake launcher whose runners' job-started hooks
// recorded jobs (rm.JobHookReader), until Cleanup.
type hookLauncher struct {
	*fakeLauncher
	mu   sync.Mutex
	jobs map[rm.AttemptID]rm.Job
}

var _ rm.JobHookReader = (*hookLauncher)(nil)

func (h *hookLauncher) HookJob(a rm.AttemptID) (rm.Job, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.jobs[a]
	return j, ok
}

func (h *hookLauncher) Cleanup(a rm.AttemptID, failed bool) error {
	h.mu.Lock()
	delete(h.jobs, a)
	h.mu.Unlock()
	return h.fakeLauncher.Cleanup(a, failed)
}

func (h *hookLauncher) record(a rm.AttemptID, j rm.Job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jobs[a] = j
}

func hookEnv(t *testing.T) (*env, *hookLauncher) {
	var h *hookLauncher
	e := newEnv(t, nil, func(c *reconcile.Config) {
		h = &hookLauncher{fakeLauncher: c.Launcher.(*fakeLauncher), jobs: map[rm.AttemptID]rm.Job{}}
		c.Launcher = h
	})
	return e, h
}

var hooked = rm.Job{Workflow: "acme/repo/.github/workflows/ci.yml@refs/heads/main", Name: "build", RunID: 4242}

// TestHookNamesTheJob: the attempt of a runner that ran a job GitHub never
// named is concluded with the job its started hook recorded, and no id.
func TestHookNamesTheJob(t *testing.T) {
	e, h := hookEnv(t)
	a, p := launchOne(t, e)
	h.record(a.ID, hooked)
	e.launcher.work(a.ID)
	p.exit(0)
	e.pass()
	got := e.attempt(a.ID)
	require.Equal(t, rm.CompletedJob, got.Outcome.Kind)
	assert.Equal(t, hooked, got.Job, "the hook's workflow, job and run")
	assert.False(t, got.Job.Known(), "no id: only GitHub gives one")
}

// TestHookNeverOverGitHub: GitHub's word names the job; the hook's record
// fills only what GitHub left empty, and GitHub's later word replaces it.
func TestHookNeverOverGitHub(t *testing.T) {
	t.Run("GitHubFirst", func(t *testing.T) {
		e, h := hookEnv(t)
		a, p := launchOne(t, e)
		h.record(a.ID, rm.Job{Workflow: "forged.yml", Name: "forged", RunID: 1})
		ev := started(a.RunnerName, 7)
		ev.RunID = 0 // GitHub's word lacks the run
		e.demand(1, ev)
		e.pass()
		e.target.drop(a.RunnerName)
		p.exit(0)
		e.pass()
		got := e.attempt(a.ID)
		require.Equal(t, rm.CompletedJob, got.Outcome.Kind)
		assert.Equal(t, rm.Job{ID: jobKey(7), Workflow: "ci.yml", Name: "build 7", RunID: 1}, got.Job,
			"GitHub's id, workflow and name; the hook's run id only because GitHub gave none")
	})
	t.Run("GitHubLater", func(t *testing.T) {
		e, h := hookEnv(t)
		a, p := launchOne(t, e)
		h.record(a.ID, hooked)
		e.launcher.work(a.ID)
		p.exit(0)
		e.pass()
		require.Equal(t, hooked, e.attempt(a.ID).Job)
		e.target.drop(a.RunnerName)
		e.clock.Advance(1e9)
		e.demand(1, started(a.RunnerName, 11), completed(a.RunnerName, 11))
		e.pass()
		assert.Equal(t, rm.Job{ID: jobKey(11), Workflow: "ci.yml", Name: "build 11", RunID: 110}, e.attempt(a.ID).Job,
			"GitHub's later word replaces the hook's whole")
	})
}
