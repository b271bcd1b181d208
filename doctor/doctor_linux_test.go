package doctor_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// startRunner starts a process that looks like a runner of attempt id in
// the data directory.
func (h host) startRunner(t *testing.T, id rm.AttemptID) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	root := filepath.Join(h.dir, "attempts", id.String())
	require.NoError(t, os.MkdirAll(root, 0o700))
	cmd := exec.Command("sleep", "60")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), platform.AttemptEnv + "=" + id.String()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	return cmd, done
}

func TestRun(t *testing.T) {
	h := newHost(t)
	live := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(rm.StateBusy).Build()
	require.NoError(t, h.st.RecordAttempt(t.Context(), live))
	h.startRunner(t, live.ID)
	_, orphanDone := h.startRunner(t, rm.NewAttemptID())

	var reported []doctor.Check
	s := h.setup()
	s.Report = func(c doctor.Check) { reported = append(reported, c) }
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, checks, reported, "every check is reported as it is made")
	assert.Zero(t, doctor.Failed(checks), "%v", checks)
	m := byName(checks)
	for _, name := range []string{"config", "data-dir", "journal-integrity", "disk", "memory", "policies", "github", "github-scope", "daemon", "registrations", "sessions"} {
		require.Len(t, m[name], 1, name)
		assert.Equal(t, doctor.OK, m[name][0].Status, "%s: %s", name, m[name][0])
	}
	assert.Equal(t, doctor.Warn, m["attempt-dirs"][0].Status)
	assert.Contains(t, m["attempt-dirs"][0].Detail, "1 leftover", "the unknown attempt's root")
	procs := m["runner-processes"][0]
	assert.Equal(t, doctor.Warn, procs.Status)
	assert.Contains(t, procs.Detail, "2 running, 1 that no live attempt owns")

	t.Run("DaemonRunning", func(t *testing.T) {
		s := h.setup()
		s.Fix = true
		s.DaemonRunning = func(context.Context) (bool, error) { return true, nil }
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		assert.Contains(t, byName(checks)["runner-processes"][0].Hint, "the running daemon stops them")
		select {
		case <-orphanDone:
			t.Fatal("doctor --fix stopped a runner while the daemon runs")
		default:
		}
	})
	t.Run("Fix", func(t *testing.T) {
		s := h.setup()
		s.Fix = true
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		m := byName(checks)
		assert.Equal(t, doctor.OK, m["runner-processes"][0].Status)
		assert.Contains(t, m["runner-processes"][0].Detail, "stopped 1")
		assert.Contains(t, m["attempt-dirs"][0].Detail, "removed 1")
		// doctor saw the runner go (a zombie counts as gone); this test's
		// own reaper closes orphanDone a moment later.
		select {
		case <-orphanDone:
		case <-time.After(10 * time.Second):
			t.Fatal("the leftover runner still runs")
		}
		assert.DirExists(t, filepath.Join(h.dir, "attempts", live.ID.String()), "a live attempt's root stays")
	})
}
