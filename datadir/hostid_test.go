package datadir_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

func TestLoadOrCreateHostID(t *testing.T) {
	t.Run("Kept", func(t *testing.T) {
		dir := datadir.New(t.TempDir())
		id, err := dir.LoadOrCreateHostID()
		require.NoError(t, err)
		again, err := dir.LoadOrCreateHostID()
		require.NoError(t, err)
		assert.Equal(t, id, again)
		fi, err := os.Stat(filepath.Join(dir.Root(), "state", "host-id"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
	t.Run("OneWinner", func(t *testing.T) {
		dir := datadir.New(t.TempDir())
		var wg sync.WaitGroup
		ids := make([]rm.HostID, 8)
		for i := range ids {
			wg.Go(func() {
				id, err := dir.LoadOrCreateHostID()
				assert.NoError(t, err)
				ids[i] = id
			})
		}
		wg.Wait()
		for _, id := range ids {
			assert.Equal(t, ids[0], id, "every caller got the one id written")
		}
		left, err := os.ReadDir(filepath.Join(dir.Root(), "state"))
		require.NoError(t, err)
		assert.Len(t, left, 1, "no temporary file is left")
	})
	t.Run("Corrupt", func(t *testing.T) {
		dir := datadir.New(t.TempDir())
		require.NoError(t, os.MkdirAll(filepath.Join(dir.Root(), "state"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir.Root(), "state", "host-id"), []byte("nope\n"), 0o600))
		_, err := dir.LoadOrCreateHostID()
		assert.ErrorContains(t, err, "does not hold a host id")
	})
}
