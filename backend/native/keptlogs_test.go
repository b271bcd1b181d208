//go:build linux

package native_test

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

	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
)

// A finished attempt's runner log and _diag logs (gzipped) outlive its
// root, which Cleanup removes as before.
func TestNativeCleanupKeepsLogs(t *testing.T) {
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	l := native.NewLauncher(data)
	id, p := launch(t, l, installed, "job")
	waitDone(t, p, 10*time.Second)
	require.NoError(t, l.Cleanup(id, false))
	assert.NoDirExists(t, l.Root(id), "the work directory is removed")

	kept := datadir.New(data).KeptLog(id)
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
		l := native.NewLauncher(data, native.WithoutKeptLogs())
		id, p := launch(t, l, installed, "exit0")
		waitDone(t, p, 10*time.Second)
		require.NoError(t, l.Cleanup(id, false))
		assert.NoDirExists(t, datadir.New(data).KeptLog(id))
	})
}
