package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
)

// TestRunRunnerEnvironHoldsNoSecrets starts the daemon with its token under
// a custom name, a custom webhook secret and an unrelated secret in its
// environment, and reads its idle runner's /proc/<pid>/environ: none of
// those values is there (a job could read them), and neither runner.log nor
// _diag/ holds the runner's JIT configuration or its key.
func TestRunRunnerEnvironHoldsNoSecrets(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	const (
		hookSecret = "whsec_custom_name_0123456789"
		awsSecret  = "aws_unrelated_secret_0123456789"
	)
	cfg := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
[github]
url = "`+srv.URL()+`"
api_url = "`+srv.APIURL()+`"
token_env = "MY_TOKEN"

[admission]
memory_reserve = "256MiB"
disk_floor = "1MiB"

[webhook]
listen = "127.0.0.1:0"
secret_env = "MY_HOOK_SECRET"
`), 0o600))
	t.Setenv("MY_TOKEN", fakeToken)
	t.Setenv("MY_HOOK_SECRET", hookSecret)
	t.Setenv("SOME_AWS_SECRET", awsSecret)
	secrets := map[string]string{"MY_TOKEN": fakeToken, "MY_HOOK_SECRET": hookSecret, "SOME_AWS_SECRET": awsSecret}
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "1", "--min-idle", "1",
		"--runner-dir", runnerDir, "--memory-estimate", "64MiB")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "--log-format", "json", "run", "--drain"},
			app.Streams{Stdout: &logs, Stderr: &logs})
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, 0, code, logs.String())
		case <-time.After(30 * time.Second):
			t.Error("run did not stop on cancel")
		}
	}
	defer stop()
	client := localapi.NewClient(e.dataDir)
	require.Eventually(t, func() bool {
		_, err := client.Status(ctx)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the daemon answers on its socket\n%s", logs.String())
	assert.Regexp(t, regexp.MustCompile(`serving workflow_job webhooks`), logs.String(), "the webhook secret was read")

	// The runner kept for min idle.
	var id string
	var pid int
	idle := assert.Eventually(t, func() bool {
		var got []struct {
			ID  string `json:"id"`
			PID int    `json:"pid"`
		}
		if json.Unmarshal([]byte(e.ok("attempts", "--state", "live", "--json")), &got) != nil || len(got) == 0 || got[0].PID == 0 {
			return false
		}
		id, pid = got[0].ID, got[0].PID
		return true
	}, 30*time.Second, 50*time.Millisecond, "a runner is kept for min idle")
	if !idle {
		t.Fatalf("no runner launched\n%s\n%s", logs.String(), e.ok("attempts"))
	}
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // should --drain not stop it

	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	require.NoError(t, err)
	environ := map[string]string{}
	for kv := range strings.SplitSeq(strings.TrimRight(string(raw), "\x00"), "\x00") {
		name, value, _ := strings.Cut(kv, "=")
		environ[name] = value
	}
	// Booleans, not the environment in the message: it holds the JIT config.
	secrets["RM_TEST_TOKEN"] = fakeToken
	for name, value := range secrets {
		_, has := environ[name]
		assert.False(t, has, "$%s reaches the runner, and every job it runs", name)
		assert.False(t, strings.Contains(string(raw), value), "$%s's value reaches the runner, and every job it runs", name)
	}
	assert.Equal(t, id, environ["RUNNER_MANAGER_ATTEMPT"])
	jit := environ["ACTIONS_RUNNER_INPUT_JITCONFIG"]
	require.NotEmpty(t, jit, "the runner gets its JIT config in its environment")

	// What the runner's files must not hold: the JIT config, and the key
	// material it carries (the values of .credentials_rsaparams).
	root := filepath.Join(e.dataDir, "attempts", id)
	// Its files are written before it listens.
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(root, "runner.log"))
		return bytes.Contains(b, []byte("Listening for Jobs"))
	}, 10*time.Second, 20*time.Millisecond)
	never := []string{jit}
	var params map[string]string
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(root, ".credentials_rsaparams")), &params))
	for _, v := range params {
		if len(v) >= 16 {
			never = append(never, v)
		}
	}
	require.Greater(t, len(never), 1, "the key has parameters to look for")
	logsOf := []string{filepath.Join(root, "runner.log")}
	diag, err := filepath.Glob(filepath.Join(root, "_diag", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, diag, "the listener keeps its log in _diag/")
	logsOf = append(logsOf, diag...)
	for _, p := range logsOf {
		b := mustRead(t, p)
		for _, s := range never {
			assert.False(t, bytes.Contains(b, []byte(s)), "%s holds the runner's credentials", p)
		}
	}

	stop()
	for _, value := range []string{jit, fakeToken, hookSecret} {
		assert.False(t, strings.Contains(logs.String(), value), "the daemon's log holds no secret")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
