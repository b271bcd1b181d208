package datadir_test

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// KeepLogs keeps runner.log as it is and each regular file of _diag/
// gzipped; a root without runner.log keeps nothing.
func TestKeepLogs(t *testing.T) {
	data, root := datadir.New(t.TempDir()), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, datadir.RunnerLogName), []byte("listener args: run"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "_diag", "pages"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "_diag", "Runner_1.log"), []byte("listening"), 0o600))
	id, at := rm.NewAttemptID(), time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, data.KeepLogs(id, root, at))

	kept := data.KeptLog(id)
	b, err := os.ReadFile(filepath.Join(kept, datadir.RunnerLogName))
	require.NoError(t, err)
	assert.Equal(t, "listener args: run", string(b))
	f, err := os.Open(filepath.Join(kept, "_diag", "Runner_1.log.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err = io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, "listening", string(b))
	assert.NoDirExists(t, filepath.Join(kept, "_diag", "pages"), "the job's step logs are GitHub's")
	info, err := os.Stat(kept)
	require.NoError(t, err)
	assert.True(t, info.ModTime().Equal(at), "aged from the keeping, for the pruning")

	other := rm.NewAttemptID()
	require.NoError(t, data.KeepLogs(other, t.TempDir(), at))
	assert.NoDirExists(t, data.KeptLog(other), "never launched: nothing kept")
}

// keptLog writes a kept log directory of size bytes, aged to at.
func keptLog(t *testing.T, data datadir.Dir, size int, at time.Time) string {
	t.Helper()
	dir := data.KeptLog(rm.NewAttemptID())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "_diag"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runner.log"), make([]byte, size/2), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_diag", "Runner_1.log.gz"), make([]byte, size-size/2), 0o600))
	require.NoError(t, os.Chtimes(dir, at, at))
	return dir
}

func TestPruneKeptLogs(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour

	t.Run("Age", func(t *testing.T) {
		data := datadir.New(t.TempDir())
		old := keptLog(t, data, 100, now.Add(-15*day))
		recent := keptLog(t, data, 100, now.Add(-13*day))
		got, err := data.PruneKeptLogs(datadir.LogRetention{MaxAge: 14 * day}, now)
		require.NoError(t, err)
		assert.Equal(t, datadir.Pruned{Removed: 1, RemovedBytes: 100, Kept: 1, KeptBytes: 100}, got)
		assert.NoDirExists(t, old)
		assert.DirExists(t, recent)
	})

	t.Run("SizeOldestFirst", func(t *testing.T) {
		data := datadir.New(t.TempDir())
		var dirs []string
		for i := range 5 { // the first is the oldest
			dirs = append(dirs, keptLog(t, data, 1000, now.Add(-time.Duration(5-i)*time.Hour)))
		}
		got, err := data.PruneKeptLogs(datadir.LogRetention{MaxAge: 14 * day, MaxBytes: 2500}, now)
		require.NoError(t, err)
		assert.Equal(t, datadir.Pruned{Removed: 3, RemovedBytes: 3000, Kept: 2, KeptBytes: 2000}, got)
		for i, d := range dirs {
			if i < 3 {
				assert.NoDirExists(t, d, "the oldest go first")
			} else {
				assert.DirExists(t, d, "the newest stay")
			}
		}
	})

	t.Run("Unbounded", func(t *testing.T) {
		data := datadir.New(t.TempDir())
		d := keptLog(t, data, 1000, now.Add(-100*day))
		got, err := data.PruneKeptLogs(datadir.LogRetention{}, now)
		require.NoError(t, err)
		assert.Equal(t, 1, got.Kept)
		assert.DirExists(t, d)
	})

	t.Run("NoLogsYet", func(t *testing.T) {
		got, err := datadir.New(t.TempDir()).PruneKeptLogs(datadir.LogRetention{MaxAge: day}, now)
		require.NoError(t, err)
		assert.Zero(t, got)
	})
}
