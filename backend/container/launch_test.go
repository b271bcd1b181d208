//go:build linux

package container_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	mobycontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// inspect asks the engine, with a client of the test's own, what it keeps
// of a container.
func inspect(t testing.TB, name string) (mobycontainer.InspectResponse, error) {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithHost(engineHost(t)))
	require.NoError(t, err)
	defer cli.Close()
	res, err := cli.ContainerInspect(t.Context(), name, client.ContainerInspectOptions{})
	return res.Container, err
}

// meterTree samples the process tree of pid, as the meters do, until done
// is closed, and returns the peak resident set seen.
func meterTree(pid int, done <-chan struct{}) (peak uint64, samples int) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if u, ok := platform.SampleTrees([]int{pid})[pid]; ok {
			peak = max(peak, u.RSSBytes)
			samples++
		}
		select {
		case <-done:
			return peak, samples
		case <-t.C:
		}
	}
}

func TestLaunchRunsAJob(t *testing.T) {
	gh := newFakeGitHub(t)
	t.Setenv("CTR_TEST_PASSED", "from-the-manager")
	t.Setenv("GITHUB_TOKEN", "ghp_the_managers_own")
	l, host := newLauncher(t, container.Settings{MemoryBytes: 1 << 30, CPUs: 1.5, PassEnv: []string{"CTR_TEST_PASS*"}})

	const alloc = 256 << 20
	job := gh.enqueue(fakegithub.JobSpec{Duration: 3 * time.Second, MemoryBytes: alloc})
	spec, jit := gh.spec(t, "FROM_SPEC=1", "ACTIONS_RUNNER_INPUT_JITCONFIG=not-the-launchers", "RUNNER_MANAGER_ATTEMPT=forged")
	launchedAt := time.Now()
	p, err := l.Launch(t.Context(), spec)
	require.NoError(t, err)
	t.Logf("launched in %v", time.Since(launchedAt))
	name := container.ContainerName(spec.Attempt)

	t.Run("Container", func(t *testing.T) {
		c, err := inspect(t, name)
		require.NoError(t, err)
		assert.Equal(t, p.(*container.Process).ContainerID(), c.ID)
		for k, v := range map[string]string{
			container.LabelManaged: "true", container.LabelHost: host.String(), container.LabelAttempt: spec.Attempt.String(),
		} {
			assert.Equal(t, v, c.Config.Labels[k], "label %s", k)
		}
		assert.Equal(t, []string{container.DefaultRunnerDir + "/bin/Runner.Listener"}, []string(c.Config.Entrypoint))
		assert.Equal(t, []string{"run"}, []string(c.Config.Cmd))
		assert.Equal(t, container.DefaultRunnerDir, c.Config.WorkingDir)
		assert.NotContains(t, strings.Join(append(c.Config.Entrypoint, c.Config.Cmd...), " "), spec.JITConfig, "the JIT config is never in the command")
		assert.Contains(t, c.Config.Env, "ACTIONS_RUNNER_INPUT_JITCONFIG="+spec.JITConfig)
		assert.Contains(t, c.Config.Env, "RUNNER_MANAGER_ATTEMPT="+spec.Attempt.String())
		assert.Contains(t, c.Config.Env, "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1")
		assert.Contains(t, c.Config.Env, "FROM_SPEC=1")
		assert.Contains(t, c.Config.Env, "CTR_TEST_PASSED=from-the-manager")
		for _, kv := range c.Config.Env {
			assert.NotContains(t, kv, "ghp_the_managers_own", "the manager's environment stays the manager's")
			assert.NotEqual(t, "ACTIONS_RUNNER_INPUT_JITCONFIG=not-the-launchers", kv)
		}
		assert.Equal(t, int64(1<<30), c.HostConfig.Memory)
		assert.Equal(t, int64(1<<30), c.HostConfig.MemorySwap, "no swap")
		assert.Equal(t, int64(1.5e9), c.HostConfig.NanoCPUs)
		assert.Equal(t, "host", string(c.HostConfig.NetworkMode))
	})
	t.Run("Process", func(t *testing.T) {
		require.NotZero(t, p.PID(), "the container's init process is this host's")
		require.NotZero(t, p.Start())
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/cmdline")
		require.NoError(t, err)
		assert.Equal(t, container.DefaultRunnerDir+"/bin/Runner.Listener\x00run\x00", string(cmdline))
		assert.True(t, platform.Alive(p.PID(), p.Start()))
	})

	peak, samples := meterTree(p.PID(), p.Done())
	waitDone(t, p.Done(), time.Minute, "the runner's container")
	assert.Equal(t, 0, p.ExitCode(), "one job done: the listener's exit code, as the container's")
	assert.NoError(t, p.(*container.Process).Failure())
	t.Logf("peak RSS %d MiB over %d samples, job allocated %d MiB", peak>>20, samples, alloc>>20)
	assert.GreaterOrEqual(t, peak, uint64(alloc), "the meters see the job's memory through the container's pid")
	assert.LessOrEqual(t, peak, uint64(alloc)*110/100, "within 10 %% of what the job allocated")

	rec, ok := gh.fake.Job(job)
	require.True(t, ok)
	t.Logf("job queued %v, assigned %v, started %v, completed %v, exited %v after the launch",
		rec.QueuedAt.Sub(launchedAt), rec.AssignedAt.Sub(launchedAt), rec.StartedAt.Sub(launchedAt), rec.CompletedAt.Sub(launchedAt), time.Since(launchedAt))
	assert.Equal(t, "completed", rec.Status)
	assert.Equal(t, jit.RunnerName, rec.RunnerName, "the container's runner ran the job")
	require.NoError(t, l.Cleanup(spec.Attempt, false))
	left, err := testEngine(t).Containers(t.Context(), host)
	require.NoError(t, err)
	assert.Empty(t, left)
}

func TestOOMKilled(t *testing.T) {
	gh := newFakeGitHub(t)
	const limit = 64 << 20
	l, _ := newLauncher(t, container.Settings{MemoryBytes: limit})
	spec, _ := gh.spec(t)
	p, err := l.Launch(t.Context(), spec)
	require.NoError(t, err)
	// The job comes once the launcher has seen the container's process: a
	// busy engine's inspection can take longer than the runner takes to be
	// killed, and a container gone before it is not watched (the case of
	// TestLaunchRunsAJob's quick exits, not this one's).
	require.NotZero(t, p.PID(), "the launcher sees the container's process")
	gh.enqueue(fakegithub.JobSpec{Duration: 10 * time.Second, MemoryBytes: 256 << 20})
	peak, _ := meterTree(p.PID(), p.Done())
	waitDone(t, p.Done(), time.Minute, "the OOM-killed container")
	cp := p.(*container.Process)
	require.ErrorIs(t, cp.Failure(), container.ErrOOMKilled)
	assert.Equal(t, 128+9, p.ExitCode(), "killed by SIGKILL")
	m := cp.Memory()
	assert.Equal(t, uint64(limit), m.LimitBytes)
	assert.NotZero(t, m.OOMKills, "the OOM kill is counted")
	t.Logf("container memory at its end: %+v", m)
	assert.Less(t, peak, uint64(128<<20), "the limit held: the job never had the memory it asked for")
	assert.Contains(t, cp.Failure().Error(), spec.Attempt.String())
	require.NoError(t, l.Cleanup(spec.Attempt, true))
}

func TestLaunchFailures(t *testing.T) {
	gh := newFakeGitHub(t)
	t.Run("ImageMissing", func(t *testing.T) {
		l, _ := newLauncher(t, container.Settings{Image: "localhost/runner-manager-absent:none", Pull: container.PullNever})
		spec, _ := gh.spec(t)
		_, err := l.Launch(t.Context(), spec)
		require.ErrorIs(t, err, container.ErrImageMissing)
		assert.Equal(t, rm.ImageMissing, rm.LaunchFailureReason(err))
		assert.Contains(t, err.Error(), "localhost/runner-manager-absent:none")
		require.ErrorIs(t, testEngine(t).CheckImage(t.Context(), "localhost/runner-manager-absent:none"), container.ErrImageMissing)
		require.NoError(t, testEngine(t).CheckImage(t.Context(), runnerImage(t)))
		require.NoError(t, l.Cleanup(spec.Attempt, true))
	})
	t.Run("PullFailed", func(t *testing.T) {
		// A registry on a loopback port nobody listens on.
		l, _ := newLauncher(t, container.Settings{Image: "127.0.0.1:1/runner-manager-absent:none", Pull: container.PullMissing})
		spec, _ := gh.spec(t)
		_, err := l.Launch(t.Context(), spec)
		require.ErrorIs(t, err, container.ErrPullFailed)
		assert.NotErrorIs(t, err, container.ErrEngineDown)
		assert.Equal(t, rm.ImagePullFailed, rm.LaunchFailureReason(err))
		require.NoError(t, l.Cleanup(spec.Attempt, true))
	})
	t.Run("StartFailed", func(t *testing.T) {
		l, host := newLauncher(t, container.Settings{RunnerDir: "/not/the/runner"})
		spec, _ := gh.spec(t)
		_, err := l.Launch(t.Context(), spec)
		require.ErrorIs(t, err, container.ErrStartFailed)
		assert.Equal(t, rm.LaunchFailed, rm.LaunchFailureReason(err))
		assert.NotContains(t, err.Error(), spec.JITConfig)
		require.NoError(t, l.Cleanup(spec.Attempt, true))
		left, err := testEngine(t).Containers(t.Context(), host)
		require.NoError(t, err)
		assert.Empty(t, left, "Cleanup removes a container that never started")
	})
	t.Run("LaunchedOnce", func(t *testing.T) {
		l, _ := newLauncher(t, container.Settings{})
		spec, _ := gh.spec(t)
		p, err := l.Launch(t.Context(), spec)
		require.NoError(t, err)
		_, err = l.Launch(t.Context(), spec)
		require.ErrorContains(t, err, "launched once")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		require.NoError(t, p.Stop(ctx, 5*time.Second))
		require.NoError(t, l.Cleanup(spec.Attempt, false))
	})
	t.Run("BadSpec", func(t *testing.T) {
		l, _ := newLauncher(t, container.Settings{})
		_, err := l.Launch(t.Context(), rm.LaunchSpec{JITConfig: "x"})
		require.ErrorContains(t, err, "no attempt")
		_, err = l.Launch(t.Context(), rm.LaunchSpec{Attempt: rm.NewAttemptID()})
		require.ErrorContains(t, err, "no JIT configuration")
	})
}

// TestEngineDown needs no engine: a socket nobody listens on.
func TestEngineDown(t *testing.T) {
	e, err := container.Connect("unix://" + t.TempDir() + "/absent.sock")
	require.NoError(t, err)
	defer e.Close()
	host := rm.NewHostID()
	l, err := container.NewLauncher(e, host, container.Settings{Image: "localhost/any:1"})
	require.NoError(t, err)
	defer l.Close()
	a := rm.NewAttemptID()

	_, err = e.Ping(t.Context())
	require.ErrorIs(t, err, container.ErrEngineDown)
	_, err = l.Launch(t.Context(), rm.LaunchSpec{Attempt: a, JITConfig: "c2VjcmV0"})
	require.ErrorIs(t, err, container.ErrEngineDown)
	assert.Equal(t, rm.BackendUnavailable, rm.LaunchFailureReason(err))
	assert.NotContains(t, err.Error(), "c2VjcmV0")
	_, err = l.Adopt(a, 4242, 1)
	require.ErrorIs(t, err, container.ErrEngineDown)
	assert.False(t, errors.Is(err, rm.ErrProcessGone), "an engine that does not answer says nothing of the container")
	require.ErrorIs(t, l.Cleanup(a, false), container.ErrEngineDown)
	_, err = e.Containers(t.Context(), host)
	require.ErrorIs(t, err, container.ErrEngineDown)
	require.ErrorIs(t, e.CheckImage(t.Context(), "localhost/any:1"), container.ErrEngineDown)
	assert.False(t, l.RanJob(a))
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func fileMode(t testing.TB, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().String()
}
