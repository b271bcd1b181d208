package datadir_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
)

// Peaks no job of this host can have had are refused on load, with a
// warning through the logger given (not the default one).
func TestLoadPeaksRefusesImplausiblePeaks(t *testing.T) {
	def := captureLog(t)
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	require.NoError(t, os.WriteFile(path, []byte("[policies]\nok = [100, 0, 200, 5000]\nhuge = [9000]\nzero = [0]\n"), 0o600))
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))

	p, err := datadir.LoadPeaks(path, datadir.PeaksLogger(log), datadir.PeaksAtMost(4096))
	require.NoError(t, err)
	assert.Equal(t, map[string][]uint64{"ok": {100, 200}}, p.Policies, "implausible peaks are left out, the rest kept")
	assert.Contains(t, logs.String(), `"level":"WARN"`, "through the configured logger, in its format")
	assert.Contains(t, logs.String(), "implausible peaks")
	assert.Contains(t, logs.String(), "huge: 9000")
	assert.Contains(t, logs.String(), "ok: 0")
	assert.Empty(t, def.String(), "nothing through the default logger")
	assert.FileExists(t, path, "the file is kept")
}

func TestLoadPeaksCorruptWarnsThroughTheLoggerGiven(t *testing.T) {
	def := captureLog(t)
	path := filepath.Join(t.TempDir(), "memory-peaks.toml")
	require.NoError(t, os.WriteFile(path, []byte("[policies]\nabc = [1, 2\n"), 0o600))
	var logs bytes.Buffer
	_, err := datadir.LoadPeaks(path, datadir.PeaksLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	require.NoError(t, err)
	assert.Contains(t, logs.String(), `"msg":"memory peaks file is corrupt; moved aside, starting with no peaks"`)
	assert.Empty(t, def.String())
}
