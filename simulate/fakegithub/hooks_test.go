//go:build unix

package fakegithub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// runHooked runs one job of spec on a classic runner whose environment is
// env (and whose root's .env is dotEnv) and returns the job's record.
func runHooked(t *testing.T, spec fakegithub.JobSpec, dotEnv string, env ...string) fakegithub.JobRecord {
	t.Helper()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 60*time.Second)
	owner, name, _ := strings.Cut(repo, "/")
	spec.Repo, spec.Labels = repo, []string{"self-hosted", "hooked"}
	id := s.EnqueueJob(spec)
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, &gh.GenerateJITConfigRequest{
		Name: "rm-hooked", RunnerGroupID: 1, Labels: []string{"self-hosted", "hooked"},
	})
	require.NoError(t, err)
	root := runnerRoot(t, install)
	if dotEnv != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte(dotEnv), 0o644))
	}
	p := startRunner(t, root, jit.GetEncodedJITConfig(), env...)
	require.NoError(t, s.WaitJobsCompleted(ctx))
	assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
	rec, ok := s.Job(id)
	require.True(t, ok)
	return rec
}

// hookScript writes a hook script into a directory of its own.
func hookScript(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o700))
	return path
}

// TestRunnerJobHooks: the fake runner runs the job hooks its environment
// names as the official runner does: the started one as the job's first
// step, the completed one as its last, with the job's GITHUB_* variables
// and environment files, their output in the job's log and what they
// write to GITHUB_STEP_SUMMARY in the job's step summary.
func TestRunnerJobHooks(t *testing.T) {
	t.Parallel()
	started := hookScript(t, "started.sh", `echo "started: $GITHUB_REPOSITORY $GITHUB_WORKFLOW $GITHUB_JOB run $GITHUB_RUN_ID"
echo "FROM_HOOK=set by the started hook" >>"$GITHUB_ENV"
`)
	completed := hookScript(t, "completed.sh", `echo "completed: FROM_HOOK=$FROM_HOOK"
echo "### from the hook" >>"$GITHUB_STEP_SUMMARY"
`)
	rec := runHooked(t, fakegithub.JobSpec{Name: "Build (linux)", Key: "build", Script: `echo "step: FROM_HOOK=$FROM_HOOK"`, Duration: 50 * time.Millisecond}, "",
		fakerunner.EnvHookJobStarted+"="+started, fakerunner.EnvHookJobCompleted+"="+completed)
	assert.Equal(t, fakegithub.ResultSucceeded, rec.Result)
	log := rec.Log
	assert.Contains(t, log, "##[group]"+fakerunner.StepJobStarted+"\nA job started hook has been configured by the self-hosted runner administrator\n")
	assert.Contains(t, log, "##[group]Run '"+started+"'\nshell: ")
	assert.Contains(t, log, "started: "+repo+" .github/workflows/ci.yml build run ")
	assert.Contains(t, log, "step: FROM_HOOK=set by the started hook\n", "a hook's GITHUB_ENV reaches the job's steps")
	assert.Contains(t, log, "##[group]"+fakerunner.StepJobCompleted+"\nA job completed hook has been configured by the self-hosted runner administrator\n")
	assert.Contains(t, log, "completed: FROM_HOOK=set by the started hook\n")
	assert.Less(t, strings.Index(log, "started:"), strings.Index(log, "step:"), "the started hook runs first")
	assert.Less(t, strings.Index(log, "step:"), strings.Index(log, "completed:"), "the completed hook runs last")
	assert.Equal(t, "### from the hook\n", rec.StepSummary)
}

// TestRunnerJobHookFailures: a hook that fails, names no script the
// runner runs, or names no file fails the job, as with the official
// runner; a started hook's failure skips the job's steps, not the
// completed hook.
func TestRunnerJobHookFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, variable, hook, want string
		steps                      bool
	}{
		{"StartedFails", fakerunner.EnvHookJobStarted, hookScript(t, "fail.sh", "echo failing; exit 3\n"), "##[error]Process completed with exit code 3.", false},
		{"CompletedFails", fakerunner.EnvHookJobCompleted, hookScript(t, "fail.sh", "false\necho unreached\n"), "##[error]Process completed with exit code 1.", true},
		{"NotAScript", fakerunner.EnvHookJobStarted, hookScript(t, "hook.py", "print(1)\n"), "is not a valid path to a script. Make sure it ends in '.sh', '.ps1' or '.js'.", false},
		{"Missing", fakerunner.EnvHookJobCompleted, "/nonexistent/hook.sh", "##[error]File doesn't exist", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			always := hookScript(t, "always.sh", "echo the completed hook ran\n")
			env := []string{tc.variable + "=" + tc.hook}
			if tc.variable == fakerunner.EnvHookJobStarted {
				env = append(env, fakerunner.EnvHookJobCompleted+"="+always)
			}
			rec := runHooked(t, fakegithub.JobSpec{Name: "build", Script: "echo the step ran"}, "", env...)
			assert.Equal(t, fakegithub.ResultFailed, rec.Result, rec.Log)
			assert.Contains(t, rec.Log, tc.want)
			assert.NotContains(t, rec.Log, "unreached", "a .sh hook runs with -e")
			assert.Equal(t, tc.steps, strings.Contains(rec.Log, "the step ran\n"), "the job's steps run only after a started hook that succeeded")
			if tc.variable == fakerunner.EnvHookJobStarted {
				assert.Contains(t, rec.Log, "the completed hook ran\n", "the completed hook runs always")
			}
		})
	}
}

// TestRunnerDotEnv: the listener sets its root's .env over its
// environment, as the official one does, hooks included.
func TestRunnerDotEnv(t *testing.T) {
	t.Parallel()
	fromEnv := hookScript(t, "env.sh", "echo from the environment\n")
	fromDotEnv := hookScript(t, "dotenv.sh", "echo from .env: $EXTRA\n")
	rec := runHooked(t, fakegithub.JobSpec{Name: "build"}, "EXTRA=extra value\n"+fakerunner.EnvHookJobStarted+"="+fromDotEnv+"\n",
		fakerunner.EnvHookJobStarted+"="+fromEnv)
	assert.Equal(t, fakegithub.ResultSucceeded, rec.Result)
	assert.Contains(t, rec.Log, "from .env: extra value\n")
	assert.NotContains(t, rec.Log, "from the environment")
}

// TestRunnerNoHooks: without hooks a job's log is its steps alone.
func TestRunnerNoHooks(t *testing.T) {
	t.Parallel()
	rec := runHooked(t, fakegithub.JobSpec{Name: "build", Script: "echo the step ran"}, "")
	assert.Equal(t, fakegithub.ResultSucceeded, rec.Result)
	assert.Contains(t, rec.Log, "the step ran\n")
	assert.NotContains(t, rec.Log, "hook")
	assert.Empty(t, rec.StepSummary)
}
