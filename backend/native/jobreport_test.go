//go:build linux

package native_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/jobreport"
	"github.com/runner-manager/runner-manager/backend/native"
)

// environOf is the environment of a live process, by name.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	require.NoError(t, err)
	env := map[string]string{}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// launchWithHooks launches a sleeping listener whose spec names a
// completed hook of the user's and whose install's .env names a started
// one.
func launchWithHooks(t *testing.T, l *native.Launcher) (rm.AttemptID, rm.Process) {
	t.Helper()
	installed := fakeRunner(t, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(installed, ".env"), []byte("LANG=C.UTF-8\n"+jobreport.EnvJobStarted+"=/opt/hooks/start.sh\n"), 0o644))
	id := rm.NewAttemptID()
	p, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: id, RunnerDir: installed, JITConfig: "secret-jit",
		Policy: rm.Policy{Name: "linux-small"},
		Env:    []string{"MODE=sleep", jobreport.EnvJobCompleted + "=/opt/hooks/end.sh"}})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Stop(t.Context(), 0)
		_ = l.Cleanup(id, false)
		_ = l.Close()
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(l.Root(id), "env.names"))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	return id, p
}

func TestNativeJobReport(t *testing.T) {
	l := native.NewLauncher(t.TempDir(), native.WithJobReport("build-1"))
	id, p := launchWithHooks(t, l)
	root := l.Root(id)
	env := environOf(t, p.PID())
	dir := filepath.Join(root, jobreport.HookDir)
	assert.Equal(t, filepath.Join(dir, jobreport.StartedScript), env[jobreport.EnvJobStarted])
	assert.Equal(t, filepath.Join(dir, jobreport.CompletedScript), env[jobreport.EnvJobCompleted])
	assert.Equal(t, "LANG=C.UTF-8\n", readFile(t, filepath.Join(root, ".env")),
		"the root's .env no longer names a hook (it would win over the manager's): the manager's chains it")
	assert.Contains(t, readFile(t, filepath.Join(dir, jobreport.StartedScript)), "rm_user='/opt/hooks/start.sh'")
	completed := readFile(t, filepath.Join(dir, jobreport.CompletedScript))
	assert.Contains(t, completed, "rm_user='/opt/hooks/end.sh'")
	assert.Contains(t, completed, "'build-1'")
	assert.Contains(t, completed, "'linux-small'")
	assert.NotContains(t, completed, "secret-jit", "no secret in a hook")

	_, ok := l.HookJob(id)
	assert.False(t, ok, "no job recorded before the started hook ran")
	// The started hook, as the runner runs it (its user's hook is missing
	// here, so its step fails; the record is written first all the same).
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", env[jobreport.EnvJobStarted])
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GITHUB_WORKFLOW_REF=octo/app/.github/workflows/ci.yml@refs/heads/main",
		"GITHUB_JOB=build", "GITHUB_RUN_ID=77"}
	out, err := cmd.CombinedOutput()
	assert.Error(t, err, "the user's hook does not exist: the runner would fail the step too")
	assert.Contains(t, string(out), "File doesn't exist")
	job, ok := l.HookJob(id)
	require.True(t, ok)
	assert.Equal(t, rm.Job{Workflow: "octo/app/.github/workflows/ci.yml@refs/heads/main", Name: "build", RunID: 77}, job)

	require.NoError(t, p.Stop(t.Context(), 0))
	require.NoError(t, l.Cleanup(id, false))
	_, ok = l.HookJob(id)
	assert.False(t, ok, "gone with the root")
}

// Without the report the runner's environment is as the spec said, and
// the root holds no hook.
func TestNativeJobReportOff(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	id, p := launchWithHooks(t, l)
	env := environOf(t, p.PID())
	assert.Equal(t, "/opt/hooks/end.sh", env[jobreport.EnvJobCompleted])
	assert.Empty(t, env[jobreport.EnvJobStarted])
	assert.NoDirExists(t, filepath.Join(l.Root(id), jobreport.HookDir))
	assert.Contains(t, readFile(t, filepath.Join(l.Root(id), ".env")), jobreport.EnvJobStarted+"=/opt/hooks/start.sh")
	_, ok := l.HookJob(id)
	assert.False(t, ok)
}
