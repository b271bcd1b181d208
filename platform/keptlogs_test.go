package platform_test

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// A finished attempt's runner log and _diag logs (gzipped) outlive its
// root, which Cleanup removes as before.
func TestNativeCleanupKeepsLogs(t *testing.T) {
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	l := platform.NewNativeLauncher(data)
	id, p := launch(t, l, installed, "job")
	waitDone(t, p, 10*time.Second)
	require.NoError(t, l.Cleanup(id, false))
	assert.NoDirExists(t, l.Root(id), "the work directory is removed")

	kept := platform.KeptLogDir(data, id)
	assert.Equal(t, filepath.Join(kept, "runner.log"), l.RunnerLog(id))
	assert.Contains(t, readFile(t, l.RunnerLog(id)), "listener args: run")
	info, err := os.Stat(l.RunnerLog(id))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	diag, err := filepath.Glob(filepath.Join(kept, "_diag", "*.gz"))
	require.NoError(t, err)
	require.Len(t, diag, 2, "the listener's and the worker's logs")
	var texts []string
	for _, path := range diag {
		f, err := os.Open(path)
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		b, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		texts = append(texts, strings.TrimSpace(string(b)))
	}
	assert.ElementsMatch(t, []string{"listening", "running a job"}, texts)

	t.Run("Without", func(t *testing.T) {
		l := platform.NewNativeLauncher(data, platform.WithoutKeptLogs())
		id, p := launch(t, l, installed, "exit0")
		waitDone(t, p, 10*time.Second)
		require.NoError(t, l.Cleanup(id, false))
		assert.NoDirExists(t, platform.KeptLogDir(data, id))
	})
}

// keptLog writes a kept log directory of size bytes, aged to at.
func keptLog(t *testing.T, data string, size int, at time.Time) string {
	t.Helper()
	dir := platform.KeptLogDir(data, rm.NewAttemptID())
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
		data := t.TempDir()
		old := keptLog(t, data, 100, now.Add(-15*day))
		recent := keptLog(t, data, 100, now.Add(-13*day))
		got, err := platform.PruneKeptLogs(data, platform.LogRetention{MaxAge: 14 * day}, now)
		require.NoError(t, err)
		assert.Equal(t, platform.Pruned{Removed: 1, RemovedBytes: 100, Kept: 1, KeptBytes: 100}, got)
		assert.NoDirExists(t, old)
		assert.DirExists(t, recent)
	})

	t.Run("SizeOldestFirst", func(t *testing.T) {
		data := t.TempDir()
		var dirs []string
		for i := range 5 { // the first is the oldest
			dirs = append(dirs, keptLog(t, data, 1000, now.Add(-time.Duration(5-i)*time.Hour)))
		}
		got, err := platform.PruneKeptLogs(data, platform.LogRetention{MaxAge: 14 * day, MaxBytes: 2500}, now)
		require.NoError(t, err)
		assert.Equal(t, platform.Pruned{Removed: 3, RemovedBytes: 3000, Kept: 2, KeptBytes: 2000}, got)
		for i, d := range dirs {
			if i < 3 {
				assert.NoDirExists(t, d, "the oldest go first")
			} else {
				assert.DirExists(t, d, "the newest stay")
			}
		}
	})

	t.Run("Unbounded", func(t *testing.T) {
		data := t.TempDir()
		d := keptLog(t, data, 1000, now.Add(-100*day))
		got, err := platform.PruneKeptLogs(data, platform.LogRetention{}, now)
		require.NoError(t, err)
		assert.Equal(t, 1, got.Kept)
		assert.DirExists(t, d)
	})

	t.Run("NoLogsYet", func(t *testing.T) {
		got, err := platform.PruneKeptLogs(t.TempDir(), platform.LogRetention{MaxAge: day}, now)
		require.NoError(t, err)
		assert.Zero(t, got)
	})
}
