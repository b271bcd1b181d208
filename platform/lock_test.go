package platform_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	l, err := platform.LockDataDir(dir)
	require.NoError(t, err)

	_, err = platform.LockDataDir(dir)
	require.ErrorIs(t, err, platform.ErrLocked, "a second lock is refused")
	var le *platform.LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, os.Getpid(), le.PID, "the error names the holder")
	assert.Contains(t, err.Error(), "another runner-manager daemon is running on this data directory")

	require.NoError(t, l.Check(), "an intact lock checks fine")

	// The lock file deleted: Check locks a new one before anyone else can.
	require.NoError(t, os.Remove(filepath.Join(dir, platform.LockName)))
	require.NoError(t, l.Check())
	_, err = platform.LockDataDir(dir)
	require.ErrorIs(t, err, platform.ErrLocked, "the re-created lock is held")

	require.NoError(t, l.Close())
	l2, err := platform.LockDataDir(dir)
	require.NoError(t, err, "a released lock is free")
	require.NoError(t, l2.Close())
}

func TestLockCheckLosesToAnother(t *testing.T) {
	dir := t.TempDir()
	l, err := platform.LockDataDir(dir)
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, os.Remove(filepath.Join(dir, platform.LockName)))
	other, err := platform.LockDataDir(dir)
	require.NoError(t, err, "a deleted lock file guards nothing")
	defer other.Close()
	require.ErrorIs(t, l.Check(), platform.ErrLocked, "the first holder learns it lost its lock")
}

func TestIdentify(t *testing.T) {
	s, err := platform.Identify()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), s.PID)
	assert.NotEmpty(t, s.Hostname)
	assert.NotEmpty(t, s.BootID)
	assert.True(t, platform.Alive(s.PID, s.Start), "the start stamp names this process")
}
