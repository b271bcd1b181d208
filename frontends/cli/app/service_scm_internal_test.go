package app

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
)

// A Windows service has no console: its output goes to the daemon log of
// the data directory its arguments name.
func TestServiceLog(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--config", "c.toml", "--data-dir", dir, "run"},
		{"--data-dir=" + dir, "run"},
	} {
		w := serviceLog(args)
		_, err := io.WriteString(w, "line\n")
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	got, err := os.ReadFile(datadir.New(dir).DaemonLog())
	require.NoError(t, err)
	require.Equal(t, "line\nline\n", string(got))
	w := serviceLog([]string{"run"})
	_, isFile := w.(*os.File)
	require.False(t, isFile, "no data directory named: nowhere")
}
