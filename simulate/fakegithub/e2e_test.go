package fakegithub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// assertRanOnceEach checks every job completed exactly once, succeeded, on
// its own runner.
func assertRanOnceEach(t *testing.T, jobs []fakegithub.JobRecord) {
	t.Helper()
	runners := map[int64]int64{}
	for _, j := range jobs {
		assert.Equal(t, "completed", j.Status, "job %d", j.ID)
		assert.Equal(t, fakegithub.ResultSucceeded, j.Result, "job %d", j.ID)
		assert.Equal(t, 1, j.Starts, "job %d started %d times", j.ID, j.Starts)
		assert.NotZero(t, j.RunnerID, "job %d", j.ID)
		if prev, dup := runners[j.RunnerID]; dup {
			t.Errorf("jobs %d and %d ran on the same runner %d", prev, j.ID, j.RunnerID)
		}
		runners[j.RunnerID] = j.ID
		assert.False(t, j.StartedAt.Before(j.AssignedAt), "job %d started before it was assigned", j.ID)
		assert.False(t, j.CompletedAt.Before(j.StartedAt), "job %d completed before it started", j.ID)
	}
}

func TestEndToEndClassic(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 60*time.Second)
	owner, name, _ := strings.Cut(repo, "/")

	const n = 5
	for i := range n {
		s.EnqueueJob(fakegithub.JobSpec{
			Repo: repo, Labels: []string{"self-hosted", "linux", "gpu"}, Name: fmt.Sprintf("build-%d", i),
			Duration: 150 * time.Millisecond, MemoryBytes: 8 << 20, CPUMillicores: 200,
		})
	}
	var procs []*proc
	for i := range n {
		jit, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, &gh.GenerateJITConfigRequest{
			Name: fmt.Sprintf("rm-test-%d", i), RunnerGroupID: 1, Labels: []string{"self-hosted", "linux", "x64", "gpu"},
		})
		require.NoError(t, err)
		require.Equal(t, 201, resp.StatusCode)
		procs = append(procs, startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig()))
	}
	require.NoError(t, s.WaitJobsCompleted(ctx))
	for _, p := range procs {
		assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
		assert.NotContains(t, p.out.String(), "eyJ", "the JIT config must never be printed")
	}
	assertRanOnceEach(t, s.Jobs())
	assert.Empty(t, s.Runners(), "ephemeral runners are removed after their job")
}

// scaler is the manager side of the scale-set flow, as actions/scaleset's
// docker example writes it: a runner process per wanted runner.
type scaler struct {
	t          *testing.T
	client     *scaleset.Client
	install    string
	scaleSetID int

	mu       sync.Mutex
	procs    []*proc
	started  int
	done     int
	maxWant  int
	maxAlive int
}

func (sc *scaler) HandleJobStarted(ctx context.Context, m *scaleset.JobStarted) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.started++
	return nil
}

func (sc *scaler) HandleJobCompleted(ctx context.Context, m *scaleset.JobCompleted) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.done++
	return nil
}

func (sc *scaler) alive() int {
	n := 0
	for _, p := range sc.procs {
		if !p.exited() {
			n++
		}
	}
	return n
}

func (sc *scaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.maxWant = max(sc.maxWant, count)
	for alive := sc.alive(); alive < count; alive++ {
		jit, err := sc.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{
			Name: fmt.Sprintf("rm-ss-%d", len(sc.procs)),
		}, sc.scaleSetID)
		if err != nil {
			return 0, err
		}
		sc.procs = append(sc.procs, startRunner(sc.t, runnerRoot(sc.t, sc.install), jit.EncodedJITConfig))
	}
	sc.maxAlive = max(sc.maxAlive, sc.alive())
	return sc.alive(), nil
}

func scalesetClient(t *testing.T, s *fakegithub.Server, configURL string) *scaleset.Client {
	t.Helper()
	c, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: configURL, PersonalAccessToken: token,
		SystemInfo: scaleset.SystemInfo{System: "runner-manager-test"},
	}, scaleset.WithRetryMax(1), scaleset.WithRetryWaitMax(50*time.Millisecond))
	require.NoError(t, err)
	return c
}

func TestEndToEndScaleSet(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	ctx := ctxT(t, 60*time.Second)
	client := scalesetClient(t, s, s.URL()+"/"+repo)

	ss, err := client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
		Name: "home", RunnerGroupID: 1, RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
	})
	require.NoError(t, err)
	session, err := client.MessageSessionClient(ctx, ss.ID, "host-a")
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close(context.Background()) })

	const n, maxRunners = 5, 3
	for i := range n {
		s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: fmt.Sprintf("test-%d", i), Duration: 200 * time.Millisecond})
	}
	l, err := listener.New(session, listener.Config{ScaleSetID: ss.ID, MaxRunners: maxRunners})
	require.NoError(t, err)
	sc := &scaler{t: t, client: client, install: install, scaleSetID: ss.ID}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- l.Run(runCtx, sc) }()

	require.NoError(t, s.WaitJobsCompleted(ctx))
	require.NoError(t, s.WaitFor(ctx, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return sc.done == n
	}), "every JobCompleted message reaches the listener")
	stop()
	require.ErrorIs(t, <-errc, context.Canceled)
	// Statistics read a moment before a runner exits can make the scaler
	// start one runner too many; like a manager scaling down, remove the
	// idle ones once they are online: they exit 0. (One removed before it
	// connected would exit 1, "runner not found", as the real one does.)
	require.NoError(t, s.WaitFor(ctx, func() bool {
		for _, r := range s.Runners() {
			if !r.Online {
				return false
			}
		}
		return true
	}), "the spare runners come online")
	for _, r := range s.Runners() {
		require.NoError(t, client.RemoveRunner(ctx, r.ID))
	}

	assertRanOnceEach(t, s.Jobs())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	assert.Equal(t, n, sc.started)
	assert.LessOrEqual(t, sc.maxWant, maxRunners, "totalAssignedJobs never exceeds the capacity the listener sent")
	assert.Equal(t, maxRunners, sc.maxWant)
	for _, p := range sc.procs {
		assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
	}
	assert.Empty(t, s.Runners())
}

func TestRunnerExitCodes(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	owner, name, _ := strings.Cut(repo, "/")
	jitFor := func(t *testing.T, s *fakegithub.Server, runner string) (int64, string) {
		jit, _, err := restClient(t, s, token).Actions.GenerateRepoJITConfig(ctxT(t, 10*time.Second), owner, name,
			&gh.GenerateJITConfigRequest{Name: runner, RunnerGroupID: 1, Labels: []string{"self-hosted", "x"}})
		require.NoError(t, err)
		return jit.GetRunner().GetID(), jit.GetEncodedJITConfig()
	}

	t.Run("UnknownRunner", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		id, jit := jitFor(t, s, "gone")
		_, err := restClient(t, s, token).Actions.RemoveRunner(ctxT(t, 10*time.Second), owner, name, id)
		require.NoError(t, err)
		p := startRunner(t, runnerRoot(t, install), jit)
		assert.Equal(t, 1, p.exitCode(t, 10*time.Second), p.out.String())
		assert.Contains(t, p.out.String(), "not found")
	})
	t.Run("InvalidConfig", func(t *testing.T) {
		t.Parallel()
		p := startRunner(t, runnerRoot(t, install), "bm90IGEgY29uZmln")
		assert.Equal(t, 1, p.exitCode(t, 10*time.Second), p.out.String())
		assert.Contains(t, p.out.String(), "not valid")
	})
	t.Run("NoConfig", func(t *testing.T) {
		t.Parallel()
		p := startRunner(t, runnerRoot(t, install), "")
		assert.Equal(t, 1, p.exitCode(t, 10*time.Second), p.out.String())
	})
	t.Run("Deprecated", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		s.MarkRunnerVersionDeprecated()
		_, jit := jitFor(t, s, "old")
		p := startRunner(t, runnerRoot(t, install), jit, "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1")
		assert.Equal(t, 7, p.exitCode(t, 10*time.Second), p.out.String())
		_, jit = jitFor(t, s, "old-without-flag")
		p = startRunner(t, runnerRoot(t, install), jit)
		assert.Equal(t, 1, p.exitCode(t, 10*time.Second), p.out.String())
	})
	t.Run("DeprecatedWhileIdle", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		id, jit := jitFor(t, s, "idle")
		p := startRunner(t, runnerRoot(t, install), jit, "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1")
		require.NoError(t, s.WaitFor(ctxT(t, 10*time.Second), func() bool { return online(s, id) }))
		s.MarkRunnerVersionDeprecated()
		assert.Equal(t, 7, p.exitCode(t, 10*time.Second), p.out.String())
	})
	t.Run("DeletedWhileIdle", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, fakegithub.WithPollTimeout(30*time.Second))
		id, jit := jitFor(t, s, "idle")
		p := startRunner(t, runnerRoot(t, install), jit)
		ctx := ctxT(t, 10*time.Second)
		require.NoError(t, s.WaitFor(ctx, func() bool { return online(s, id) }))
		deleted := time.Now()
		_, err := restClient(t, s, token).Actions.RemoveRunner(ctx, owner, name, id)
		require.NoError(t, err)
		// The pending long poll (30 s here) answers at once: the runner
		// exits within 10 s, a third of the poll it was waiting on.
		assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
		t.Logf("the deleted runner exited %v after its deletion", time.Since(deleted).Round(time.Millisecond))
		assert.Contains(t, p.out.String(), "deleted")
	})
	t.Run("DroppedWhileIdle", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, fakegithub.WithDropIdleRunnersAfter(300*time.Millisecond))
		_, jit := jitFor(t, s, "idle")
		p := startRunner(t, runnerRoot(t, install), jit)
		assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
		assert.Empty(t, s.Runners())
	})
	t.Run("Zombie", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, fakegithub.Zombie())
		id, jit := jitFor(t, s, "zombie")
		p := startRunner(t, runnerRoot(t, install), jit)
		ctx := ctxT(t, 10*time.Second)
		require.NoError(t, s.WaitFor(ctx, func() bool { return online(s, id) }))
		_, err := restClient(t, s, token).Actions.RemoveRunner(ctx, owner, name, id)
		require.NoError(t, err)
		// Several poll timeouts later it still lives, listed nowhere.
		calls := s.Calls(fakegithub.RouteRunnerMessages)
		require.NoError(t, s.WaitFor(ctx, func() bool { return s.Calls(fakegithub.RouteRunnerMessages) >= calls+3 }))
		assert.False(t, p.exited(), p.out.String())
		assert.Empty(t, s.Runners())
	})
	t.Run("RootHoldsAnotherRunner", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		root := runnerRoot(t, install)
		_, jit := jitFor(t, s, "first")
		require.NoError(t, os.WriteFile(filepath.Join(root, ".runner"), []byte(`{"agentId": 99, "agentName": "someone-else"}`), 0o600))
		p := startRunner(t, root, jit)
		assert.Equal(t, 1, p.exitCode(t, 10*time.Second), p.out.String())
		assert.Contains(t, p.out.String(), "someone-else")
	})
	t.Run("SymlinkedBinSharesTheInstallRoot", func(t *testing.T) {
		t.Parallel()
		// A root whose bin/ is a symlink resolves to the install dir: the
		// runner writes its files there, not in the root (DESIGN §7).
		s := newServer(t)
		shared := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(shared, "bin"), 0o755))
		require.NoError(t, os.Link(filepath.Join(install, "bin", fakegithub.ListenerName()), filepath.Join(shared, "bin", fakegithub.ListenerName())))
		root := t.TempDir()
		require.NoError(t, os.Symlink(filepath.Join(shared, "bin"), filepath.Join(root, "bin")))
		id, jit := jitFor(t, s, "linked")
		p := startRunner(t, root, jit)
		require.NoError(t, s.WaitFor(ctxT(t, 10*time.Second), func() bool { return online(s, id) }))
		assert.FileExists(t, filepath.Join(shared, ".runner"))
		assert.NoFileExists(t, filepath.Join(root, ".runner"))
		_ = p.cmd.Process.Kill()
	})
	t.Run("JITConfigInArgvRefused", func(t *testing.T) {
		t.Parallel()
		q := startProc(t, runnerRoot(t, install), nil, "run", "--jitconfig", "secret")
		assert.Equal(t, 1, q.exitCode(t, 10*time.Second))
		assert.Contains(t, q.out.String(), "argv")
	})
}

func online(s *fakegithub.Server, id int64) bool {
	for _, r := range s.Runners() {
		if r.ID == id {
			return r.Online
		}
	}
	return false
}
