package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An empty journal file starts fresh, but says so; one whose -wal file
// shows there was data is refused, and nothing is written.
func TestEmptyJournal(t *testing.T) {
	t.Run("Warned", func(t *testing.T) {
		e := newEnv(t)
		require.NoError(t, os.MkdirAll(e.dataDir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(e.dataDir, "journal.db"), nil, 0o600))
		r := e.run("attempts")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "level=WARN")
		assert.Contains(t, r.stderr, "the journal file is empty: starting a fresh journal")
	})
	t.Run("RefusedWithData", func(t *testing.T) {
		e := newEnv(t)
		e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", e.runnerDir())
		// Keep the WAL while a writer holds it, then lose the main file.
		st := e.journal()
		_, err := st.Policies(t.Context())
		require.NoError(t, err)
		path := filepath.Join(e.dataDir, "journal.db")
		wal, err := os.ReadFile(path + "-wal")
		require.NoError(t, err)
		require.NoError(t, st.Close())
		if len(wal) == 0 {
			wal = []byte("not empty") // checkpointed already: any bytes show there was data
		}
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.WriteFile(path+"-wal", wal, 0o600))

		r := e.run("--log-format", "json", "attempts")
		require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
		assert.Contains(t, r.stderr, "the file is empty but journal.db-wal holds")
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Zero(t, fi.Size(), "nothing was written")
		got, err := os.ReadFile(path + "-wal")
		require.NoError(t, err)
		assert.Equal(t, wal, got)
	})
}
