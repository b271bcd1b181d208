package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// After a crash (the daemon killed, then its runner), `run --once`
// concludes the runner's starting attempt and cleans what it left, and
// `policy rm` succeeds right after; before, the attempt stayed starting
// and the removal was refused.
func TestRunOnceConcludesWhatACrashLeft(t *testing.T) {
	e := newEnv(t)
	_, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "o1", "--repo", "octo/app", "--scale-set", "o1", "--max", "1", "--runner-dir", runnerDir)
	st := e.journal()
	p, err := st.PolicyByName(t.Context(), "o1")
	require.NoError(t, err)

	// What a daemon killed with its runner left: a starting attempt whose
	// process is gone (a reaped child's pid), and the attempt's root.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	a := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(rm.StateStarting).
		GitHubRunnerID(4242).ProcessID(dead.Process.Pid).ProcessStart(1).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))
	root := filepath.Join(e.dataDir, "attempts", a.ID.String())
	require.NoError(t, os.MkdirAll(root, 0o700))

	e.ok("run", "--once")
	got, err := st.Attempt(t.Context(), a.ID)
	require.NoError(t, err)
	require.False(t, got.Live(), "concluded by one pass: %s (%s)", got.State, got.LastMessage)
	assert.Equal(t, rm.Lost, got.Outcome.Reason, "GitHub has no trace of it: %s", got.Outcome)
	assert.NoDirExists(t, root, "its root is cleaned (a failed one's kept under .failed/)")
	assert.Contains(t, e.ok("attempts", "--policy", "o1"), "lost")

	e.ok("policy", "pause", "o1")
	assert.Contains(t, e.ok("policy", "rm", "o1"), "removed policy o1")
}
