package app_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// TestRunnerInstallConfigPaths: the configuration file's data_dir is
// expanded ("~", $VAR) and, when relative, taken beside the file, whatever
// the current directory; `runner install` made a literal ./~/ directory.
func TestRunnerInstallConfigPaths(t *testing.T) {
	e := newEnv(t)
	withFakeGitHub(t, e)
	cfg := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	body, err := os.ReadFile(cfg)
	require.NoError(t, err)
	work := filepath.Join(e.home, "work")
	require.NoError(t, os.MkdirAll(work, 0o700))
	t.Chdir(work)
	t.Setenv("RM_TEST_STATE", filepath.Join(e.home, "var"))
	listener := filepath.Join("runners", fakegithub.RunnerVersion, "bin", fakegithub.ListenerName())

	for _, tt := range []struct{ name, dataDir, want string }{
		{"tilde", "~/rm-state", filepath.Join(e.home, "rm-state")},
		{"variable", "${RM_TEST_STATE}/rm", filepath.Join(e.home, "var", "rm")},
		{"relative", "state", filepath.Join(filepath.Dir(cfg), "state")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(cfg, append([]byte("data_dir = \""+tt.dataDir+"\"\n"), body...), 0o600))
			require.NoError(t, os.MkdirAll(tt.want, 0o700))
			r := e.runRaw("runner", "install", "--repo", "octo/app")
			require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			_, err := os.Stat(filepath.Join(tt.want, listener))
			require.NoError(t, err, r.stdout)
			entries, err := os.ReadDir(work)
			require.NoError(t, err)
			assert.Empty(t, entries, "runner install wrote into the current directory")
		})
	}

	t.Run("unset variable", func(t *testing.T) {
		require.NoError(t, os.WriteFile(cfg, append([]byte("data_dir = \"$RM_TEST_NOPE/rm\"\n"), body...), 0o600))
		r := e.runRaw("runner", "install", "--repo", "octo/app")
		assert.Equal(t, app.ExitInvalid, r.code, r.stderr)
		assert.Contains(t, r.stderr, cfg+`:1: data_dir: "$RM_TEST_NOPE/rm": $RM_TEST_NOPE is not set`)
		_, err := os.Stat(filepath.Join(work, "$RM_TEST_NOPE"))
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("flag stays relative to the current directory", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(work, "here"), 0o700))
		r := e.runRaw("--data-dir", "here", "runner", "install", "--repo", "octo/app")
		require.Equal(t, 0, r.code, r.stderr)
		_, err := os.Stat(filepath.Join(work, "here", listener))
		require.NoError(t, err)
	})
}
