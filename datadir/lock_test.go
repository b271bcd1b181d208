package datadir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
)

func TestLock(t *testing.T) {
	dir := datadir.New(t.TempDir())
	l, err := dir.Lock()
	require.NoError(t, err)

	_, err = dir.Lock()
	require.ErrorIs(t, err, datadir.ErrLocked, "a second lock is refused")
	var le *datadir.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, os.Getpid(), le.PID, "the error names the holder")
	assert.Contains(t, err.Error(), "another runner-manager daemon is running on this data directory")

	require.NoError(t, l.Check(), "an intact lock checks fine")

	// The lock file deleted: Check locks a new one before anyone else can.
	require.NoError(t, os.Remove(filepath.Join(dir.Root(), "manager.lock")))
	require.NoError(t, l.Check())
	_, err = dir.Lock()
	require.ErrorIs(t, err, datadir.ErrLocked, "the re-created lock is held")

	require.NoError(t, l.Close())
	l2, err := dir.Lock()
	require.NoError(t, err, "a released lock is free")
	require.NoError(t, l2.Close())
}

func TestLockCheckLosesToAnother(t *testing.T) {
	dir := datadir.New(t.TempDir())
	l, err := dir.Lock()
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, os.Remove(filepath.Join(dir.Root(), "manager.lock")))
	other, err := dir.Lock()
	require.NoError(t, err, "a deleted lock file guards nothing")
	defer other.Close()
	require.ErrorIs(t, l.Check(), datadir.ErrLocked, "the first holder learns it lost its lock")
}
