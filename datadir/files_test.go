package datadir_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, datadir.WriteFileAtomic(path, []byte("new"), 0o644))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")

	require.Error(t, datadir.WriteFileAtomic(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestWritable(t *testing.T) {
	d := datadir.New(t.TempDir())
	require.NoError(t, d.Writable())
	entries, err := os.ReadDir(d.Root())
	require.NoError(t, err)
	assert.Empty(t, entries, "the probe is removed")
	assert.ErrorIs(t, datadir.New(filepath.Join(d.Root(), "missing")).Writable(), fs.ErrNotExist)
}
