package datadir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// The layout is what users' data directories hold: a name changed here is
// a migration, not a refactoring.
func TestLayout(t *testing.T) {
	root := t.TempDir()
	d := datadir.New(root)
	a := rm.NewAttemptID()
	for _, c := range []struct{ got, want string }{
		{d.Root(), ""},
		{d.Journal(), "journal.db"},
		{d.LockFile(), "manager.lock"},
		{d.Socket(), "manager.sock"},
		{d.DaemonLog(), "daemon.log"},
		{d.State(), "state"},
		{d.HostIDFile(), "state/host-id"},
		{d.PeaksFile(), "state/memory-peaks.toml"},
		{d.Runners(), "runners"},
		{d.Runner("2.328.0"), "runners/2.328.0"},
		{d.BadRunners(), "runners/.bad"},
		{d.BadRunner("2.328.0"), "runners/.bad/2.328.0"},
		{d.RunnerTrial("2.328.0"), "runners/.trial-2.328.0"},
		{d.Attempts(), "attempts"},
		{d.Attempt(a), "attempts/" + a.String()},
		{d.FailedAttempts(), "attempts/.failed"},
		{d.FailedAttempt(a), "attempts/.failed/" + a.String()},
		{d.SpareRoots(), "attempts/.spare"},
		{d.FailedContainerLogs(), "attempts/failed-containers"},
		{d.KeptLogs(), "logs"},
		{d.KeptLog(a), "logs/" + a.String()},
		{d.VMs(), "vm"},
		{d.VM(a), "vm/" + a.String()},
		{d.FailedVMs(), "vm/.failed"},
		{d.FailedVM(a), "vm/.failed/" + a.String()},
		{d.VMOverlays(), "vm/.overlays"},
		{d.Slots(), "slots"},
		{d.Caches(), "caches"},
	} {
		assert.Equal(t, filepath.Join(root, filepath.FromSlash(c.want)), c.got)
	}
	assert.Equal(t, "runner.log", datadir.RunnerLogName)
}

func TestNewIsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "data"), datadir.New("data").Root())
	assert.Equal(t, filepath.Join(wd, "data", "journal.db"), datadir.New("./data/").Journal())
}

func TestCreate(t *testing.T) {
	d := datadir.New(filepath.Join(t.TempDir(), "a", "data"))
	require.NoError(t, d.Create())
	assert.DirExists(t, d.State())
	require.NoError(t, d.Create(), "an existing directory is fine")
}

// RunnerLog finds the log where the attempt's life left it: its root while
// it runs, then the kept logs, else a failed attempt's kept root.
func TestRunnerLog(t *testing.T) {
	d := datadir.New(t.TempDir())
	a := rm.NewAttemptID()
	live := filepath.Join(d.Attempt(a), datadir.RunnerLogName)
	assert.Equal(t, live, d.RunnerLog(a), "none yet: where it will be")

	failed := filepath.Join(d.FailedAttempt(a), datadir.RunnerLogName)
	write(t, failed)
	assert.Equal(t, failed, d.RunnerLog(a))
	kept := filepath.Join(d.KeptLog(a), datadir.RunnerLogName)
	write(t, kept)
	assert.Equal(t, kept, d.RunnerLog(a), "the kept logs before the kept root")
	write(t, live)
	assert.Equal(t, live, d.RunnerLog(a), "a live root's first")
}

func write(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("log"), 0o600))
}
