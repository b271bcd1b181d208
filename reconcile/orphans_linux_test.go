package reconcile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// startRunnerLike starts a process that looks like a runner of attempt id
// in dataDir: its working directory under attempts/, the attempt in its
// environment, a process group of its own.
func startRunnerLike(t *testing.T, dataDir string, id rm.AttemptID) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	root := filepath.Join(dataDir, "attempts", id.String())
	require.NoError(t, os.MkdirAll(root, 0o700))
	cmd := exec.Command("sleep", "60")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), platform.AttemptEnv+"="+id.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd, done
}

func TestStartSweepsRunnerProcessesNoAttemptOwns(t *testing.T) {
	f := newFleet(t)
	dataDir := t.TempDir()
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 4))
	unknown, ended, orphan, owned := rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID()
	_, unknownDone := startRunnerLike(t, dataDir, unknown)
	_, endedDone := startRunnerLike(t, dataDir, ended)
	orphanCmd, orphanDone := startRunnerLike(t, dataDir, orphan)
	ownedCmd, ownedDone := startRunnerLike(t, dataDir, owned)
	_, elsewhereDone := startRunnerLike(t, t.TempDir(), rm.NewAttemptID()) // another manager's

	record := func(b *storetest.AttemptBuilder) {
		require.NoError(t, f.st.RecordAttempt(t.Context(), b.Policy(home.ID).Host(f.host.ID).Build()))
	}
	record(storetest.NewAttempt().ID(ended).State(rm.StateFinished))
	// Launched just before a crash: registered, but its pid never written.
	record(storetest.NewAttempt().ID(orphan).State(rm.StateRegistering).GitHubRunnerID(5))
	start, err := platform.StartTime(ownedCmd.Process.Pid)
	require.NoError(t, err)
	record(storetest.NewAttempt().ID(owned).State(rm.StateIdle).GitHubRunnerID(6).
		ProcessID(ownedCmd.Process.Pid).ProcessStart(start))

	cfg := f.config()
	cfg.AttemptsDir = datadir.New(dataDir).Attempts()
	cfg.Launcher = native.NewLauncher(dataDir)
	cfg.Loop.StopGrace = time.Second
	sup, err := reconcile.NewSupervisor(cfg)
	require.NoError(t, err)
	require.NoError(t, sup.RunOnce(t.Context()))

	for name, done := range map[string]<-chan struct{}{"unknown": unknownDone, "ended": endedDone} {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the %s attempt's runner process was not stopped", name)
		}
	}
	got, err := f.st.Attempt(t.Context(), orphan)
	require.NoError(t, err)
	assert.Equal(t, rm.StateStarting, got.State, "adopted, not killed: it may hold a job")
	assert.Equal(t, orphanCmd.Process.Pid, got.PID)
	got, err = f.st.Attempt(t.Context(), owned)
	require.NoError(t, err)
	assert.True(t, got.Live())
	for name, done := range map[string]<-chan struct{}{"orphan": orphanDone, "owned": ownedDone, "elsewhere": elsewhereDone} {
		select {
		case <-done:
			t.Errorf("the %s runner process was stopped", name)
		default:
		}
	}
}
