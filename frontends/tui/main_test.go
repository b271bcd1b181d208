package tui_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

// runMain runs tui.Main with a clean environment rooted in a temp dir, so
// no real configuration or data directory is read.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("RUNNER_MANAGER_CONFIG", "")
	t.Setenv("RUNNER_MANAGER_DATA_DIR", "")
	var stdout, stderr bytes.Buffer
	code := tui.Main(context.Background(), args, &stdout, &stderr, tui.OpenSQLite)
	return code, stdout.String(), stderr.String()
}

func TestMainHelp(t *testing.T) {
	code, out, _ := runMain(t, "--help")
	assert.Equal(t, 0, code)
	golden(t, "main-help", out)
}

func TestMainErrors(t *testing.T) {
	tests := []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"UnknownFlag", func(*testing.T) []string { return []string{"--nope"} }, "unknown flag --nope"},
		{"PastedToken", func(*testing.T) []string { return []string{"ghp_0123456789abcdefABCDEF0123456789abcd"} }, "unexpected argument [redacted]"},
		{"NoJournal", func(t *testing.T) []string { return []string{"--data-dir", t.TempDir()} }, "run `runner-manager init`"},
		{"DefaultDataDirEmpty", func(*testing.T) []string { return nil }, "state/runner-manager: run `runner-manager init`"},
		{"MissingConfig", func(t *testing.T) []string {
			return []string{"--config", filepath.Join(t.TempDir(), "none.toml")}
		}, "no such file"},
		{"PostgreSQL", func(t *testing.T) []string {
			path := filepath.Join(t.TempDir(), "config.toml")
			require.NoError(t, os.WriteFile(path, []byte("[store]\nurl = \"postgres://rm@db.example/rm\"\n"), 0o600))
			return []string{"--config", path}
		}, "opens SQLite journals only: run `runner-manager tui`"},
		{"BadConfig", func(t *testing.T) []string {
			path := filepath.Join(t.TempDir(), "config.toml")
			require.NoError(t, os.WriteFile(path, []byte("data_dir = \"/x\"\nbogus = 1\n"), 0o600))
			return []string{"--config", path}
		}, "config.toml:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args(t)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

func TestMainDataDirFromConfig(t *testing.T) {
	data := filepath.Join(t.TempDir(), "elsewhere")
	path := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, []byte("data_dir = \""+data+"\"\n"), 0o600))
	code, _, stderr := runMain(t, "--config", path)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no journal in "+data, "the configuration file named the data directory")
}
