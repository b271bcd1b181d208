//go:build unix

package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRemoveStale(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	mk := func(name string, owner int) string {
		d := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "data"), 0o700))
		if owner != 0 {
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(owner)), 0o600))
		}
		return d
	}
	stale := mk(dirPrefix+"stale", dead.Process.Pid)
	live := mk(dirPrefix+"live", os.Getppid())
	mine := mk(dirPrefix+"mine", os.Getpid())
	making := mk(dirPrefix+"making", 0)
	other := mk("someone-else", dead.Process.Pid)

	removeStale(base)
	assert.NoDirExists(t, stale, "its test process is gone")
	for _, d := range []string{live, mine, making, other} {
		assert.DirExists(t, d)
	}
}
