package reconcile_test

import (
	"os"
	"path/filepath"
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

// A crash between an attempt's conclusion and its Cleanup leaves its root:
// the start sweep cleans every root whose attempt is not live (a failed
// one's kept under .failed/ as the launcher keeps them) and leaves the
// live ones to their loop.
func TestStartSweepsAttemptRootsNoLiveAttemptOwns(t *testing.T) {
	f := newFleet(t)
	dataDir := t.TempDir()
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 4))
	unknown, finished, failed, live := rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID()
	root := func(id rm.AttemptID) string { return filepath.Join(dataDir, "attempts", id.String()) }
	for _, id := range []rm.AttemptID{unknown, finished, failed, live} {
		require.NoError(t, os.MkdirAll(filepath.Join(root(id), "_work"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root(id), "runner.log"), []byte("log"), 0o600))
	}
	notOurs := filepath.Join(dataDir, "attempts", "not-an-attempt")
	require.NoError(t, os.MkdirAll(notOurs, 0o700))
	hourAgo := time.Now().Add(-time.Hour)
	record := func(b *storetest.AttemptBuilder) {
		require.NoError(t, f.st.RecordAttempt(t.Context(), b.Policy(home.ID).Host(f.host.ID).CreatedAt(hourAgo).Build()))
	}
	record(storetest.NewAttempt().ID(finished).State(rm.StateFinished))
	record(storetest.NewAttempt().ID(failed).State(rm.StateFailed))
	// Live, its runner running: the pass re-adopts it (one whose runner is
	// gone would be concluded, and its root cleaned, by the pass).
	runner, _ := startRunnerLike(t, dataDir, live)
	start, err := platform.StartTime(runner.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, f.st.RecordAttempt(t.Context(), storetest.NewAttempt().ID(live).Policy(home.ID).Host(f.host.ID).
		State(rm.StateStarting).GitHubRunnerID(6).ProcessID(runner.Process.Pid).ProcessStart(start).Build()))

	cfg := f.config()
	cfg.AttemptsDir = datadir.New(dataDir).Attempts()
	cfg.Launcher = native.NewLauncher(dataDir)
	sup, err := reconcile.NewSupervisor(cfg)
	require.NoError(t, err)
	require.NoError(t, sup.RunOnce(t.Context()))

	for name, id := range map[string]rm.AttemptID{"unknown": unknown, "finished": finished, "failed": failed} {
		assert.NoDirExists(t, root(id), "the %s attempt's root is swept", name)
	}
	assert.DirExists(t, filepath.Join(dataDir, "attempts", ".failed", failed.String()), "a failed root is kept for debugging")
	assert.DirExists(t, root(live), "a live attempt's root is its loop's")
	assert.DirExists(t, notOurs, "a directory that names no attempt is left alone")
	assert.Contains(t, f.logs.String(), "cleaned a left-over attempt directory")
}

// Every backend's launcher that lists its roots is swept, each root by
// the launcher that listed it: a VM directory of an attempt the journal
// does not know is cleaned as a native root is.
func TestStartSweepsRootsOfEveryBackend(t *testing.T) {
	f := newFleet(t)
	dataDir, otherDir := t.TempDir(), t.TempDir()
	orphan, live := rm.NewAttemptID(), rm.NewAttemptID()
	home := f.policy(storetest.NewPolicy().Name("home").Autoscale("home", 4))
	require.NoError(t, f.st.RecordAttempt(t.Context(), storetest.NewAttempt().ID(live).Policy(home.ID).Host(f.host.ID).
		State(rm.StateStarting).GitHubRunnerID(6).Build()))
	root := func(id rm.AttemptID) string { return filepath.Join(otherDir, "attempts", id.String()) }
	for _, id := range []rm.AttemptID{orphan, live} {
		require.NoError(t, os.MkdirAll(filepath.Join(root(id), "_work"), 0o700))
	}
	other := &listed{Launcher: native.NewLauncher(otherDir)}

	cfg := f.config()
	cfg.AttemptsDir = datadir.New(dataDir).Attempts()
	cfg.Launcher = native.NewLauncher(dataDir)
	cfg.Launchers = map[rm.Backend]rm.Launcher{rm.BackendVM: other}
	sup, err := reconcile.NewSupervisor(cfg)
	require.NoError(t, err)
	require.NoError(t, sup.RunOnce(t.Context()))

	assert.NoDirExists(t, root(orphan), "the other backend's orphan root is swept")
	assert.DirExists(t, root(live), "a live attempt's root is its loop's")
	assert.Equal(t, []rm.AttemptID{orphan}, other.cleaned, "by the launcher that listed it")
}

// listed is a launcher that lists its roots and says what it cleaned.
type listed struct {
	*native.Launcher
	cleaned []rm.AttemptID
}

func (l *listed) Cleanup(a rm.AttemptID, failed bool) error {
	l.cleaned = append(l.cleaned, a)
	return l.Launcher.Cleanup(a, failed)
}

// A runner working in a deleted directory belongs to a data directory that
// is gone, perhaps with its daemon still running: the start sweep of a new
// data directory at the same path leaves it alone.
func TestStartSweepLeavesRunnersOfADeletedDataDir(t *testing.T) {
	f := newFleet(t)
	dataDir := t.TempDir()
	_, done := startRunnerLike(t, dataDir, rm.NewAttemptID())
	require.NoError(t, os.RemoveAll(filepath.Join(dataDir, "attempts")))
	require.NoError(t, os.MkdirAll(filepath.Join(dataDir, "attempts"), 0o700))

	cfg := f.config()
	cfg.AttemptsDir = datadir.New(dataDir).Attempts()
	cfg.Launcher = native.NewLauncher(dataDir)
	cfg.Loop.StopGrace = time.Second
	sup, err := reconcile.NewSupervisor(cfg)
	require.NoError(t, err)
	require.NoError(t, sup.RunOnce(t.Context()))
	// The sweep signals synchronously: had it stopped the runner, it would
	// have said so by now.
	assert.NotContains(t, f.logs.String(), "stopping a runner process")
	select {
	case <-done:
		t.Fatal("a runner of a deleted data directory was stopped")
	default:
	}
}
