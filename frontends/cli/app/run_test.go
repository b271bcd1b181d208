package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

const fakeToken = "ghp_fake_for_tests_0123456789"

// withFakeGitHub points the env's configuration at a fake GitHub that knows
// octo/app, with the token in $RM_TEST_TOKEN, and installs a fake runner
// (this test binary, as Runner.Listener) at the returned directory.
func withFakeGitHub(t *testing.T, e *env) (*fakegithub.Server, string) {
	t.Helper()
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(fakeToken), fakegithub.WithRepo("octo/app"))
	cfg := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
	require.NoError(t, os.WriteFile(cfg, []byte(`
[github]
url = "`+srv.URL()+`"
api_url = "`+srv.APIURL()+`"
token_env = "RM_TEST_TOKEN"

[admission]
memory_reserve = "256MiB"
disk_floor = "1MiB"
`), 0o600))
	t.Setenv("RM_TEST_TOKEN", fakeToken)
	exe, err := os.Executable()
	require.NoError(t, err)
	runnerDir := filepath.Join(e.home, "runner")
	require.NoError(t, fakegithub.LayoutRunnerDir(runnerDir, exe))
	return srv, runnerDir
}

func TestRunServesJobs(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "2", "--runner-dir", runnerDir,
		"--memory-estimate", "64MiB")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "--log-format", "json", "run", "--metrics-addr", "127.0.0.1:0"},
			app.Streams{Stdout: &logs, Stderr: &logs})
	}()
	client := localapi.NewClient(e.dataDir)
	require.Eventually(t, func() bool {
		_, err := client.Status(ctx)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the daemon answers on its socket\n%s", logs.String())

	t.Run("one daemon per data dir", func(t *testing.T) {
		assert.Contains(t, e.fails(1, "run"), "another runner-manager daemon is running")
	})

	for i := range 4 {
		srv.EnqueueJob(fakegithub.JobSpec{Repo: "octo/app", Labels: []string{"home"}, Name: "job-" + string(rune('a'+i)),
			Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
	}
	wctx, wcancel := context.WithTimeout(ctx, 45*time.Second)
	defer wcancel()
	require.NoError(t, srv.WaitFor(wctx, func() bool {
		for _, j := range srv.Jobs() {
			if j.Status != "completed" {
				return false
			}
		}
		return true
	}), logs.String())

	// Every job on its own runner, concluded in the journal.
	require.Eventually(t, func() bool {
		return strings.Count(e.ok("attempts", "--state", "finished"), "completed_job") == 4
	}, 20*time.Second, 100*time.Millisecond)
	runners := map[string]bool{}
	for _, j := range srv.Jobs() {
		assert.Equal(t, 1, j.Starts)
		runners[j.RunnerName] = true
	}
	assert.Len(t, runners, 4)

	// attempts --json names each job by its scale-set jobId (the fake
	// sends a UUID, as github.com does), with no REST number.
	var listed []struct {
		RunnerName string `json:"runner_name"`
		Job        *struct {
			ID     string `json:"id"`
			Number *int64 `json:"number"`
			Name   string `json:"name"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("attempts", "--json", "--state", "finished")), &listed))
	jobOf := map[string]fakegithub.JobRecord{}
	for _, j := range srv.Jobs() {
		jobOf[j.RunnerName] = j
	}
	require.Len(t, listed, 4)
	for _, a := range listed {
		j := jobOf[a.RunnerName]
		require.NotNil(t, a.Job, "attempt of %s names its job", a.RunnerName)
		_, err := uuid.Parse(a.Job.ID)
		assert.NoError(t, err, "a UUID jobId: %q", a.Job.ID)
		assert.Equal(t, j.ScaleSetJobID, a.Job.ID)
		assert.Nil(t, a.Job.Number)
		assert.Equal(t, j.Name, a.Job.Name)
	}

	out := e.ok("status")
	assert.NotContains(t, out, "not running")
	assert.Contains(t, out, "home")
	assert.Contains(t, out, "REST calls left")

	m := regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+/metrics)"`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, logs.String())
	require.Eventually(t, func() bool {
		resp, err := http.Get(m[1])
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `runner_manager_attempts_ended_total{outcome="completed_job",policy="home",reason=""} 4`) &&
			strings.Contains(string(b), `runner_manager_github_requests_total{api="actions",code="200"}`) &&
			strings.Contains(string(b), `runner_manager_reconcile_pass_duration_seconds_count{result="ok",target="repo:octo/app group=default scale-set=home"}`)
	}, 10*time.Second, 100*time.Millisecond)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop on cancel")
	}
	assert.Contains(t, logs.String(), "runner-manager stopped")
	assert.NotContains(t, logs.String(), fakeToken, "the token never reaches a log")
	assert.Contains(t, e.ok("status"), "not running")
}

func TestRunOnce(t *testing.T) {
	e := newEnv(t)
	_, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", runnerDir)
	out := e.ok("run", "--once")
	assert.Contains(t, out, "one pass done for 1 policies")
}

func TestRunWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	stderr := e.fails(app.ExitNotAuthenticated, "run")
	assert.Contains(t, stderr, "GITHUB_TOKEN")
	assert.Contains(t, stderr, "demo")
}
