package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func TestInit(t *testing.T) {
	e := newEnv(t)
	out := e.ok("init", "--no-check")
	cfgPath := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	assert.Contains(t, out, "wrote "+cfgPath)

	fi, err := os.Stat(cfgPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	content, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	assert.Contains(t, string(content), "# runner-manager configuration")
	assert.Contains(t, string(content), "memory_reserve")

	fi, err = os.Stat(e.dataDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the data dir is private")
	for _, f := range []string{"journal.db", "state/host-id"} {
		_, err := os.Stat(filepath.Join(e.dataDir, f))
		assert.NoError(t, err, f)
	}
	hosts, err := e.journal().Hosts(t.Context())
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	id, err := os.ReadFile(filepath.Join(e.dataDir, "state", "host-id"))
	require.NoError(t, err)
	assert.Equal(t, hosts[0].ID.String()+"\n", string(id))

	t.Run("exists", func(t *testing.T) {
		stderr := e.fails(app.ExitInvalid, "init", "--no-check")
		assert.Contains(t, stderr, "--force")
		e.ok("init", "--no-check", "--force")
		// The host keeps its identity.
		id2, err := os.ReadFile(filepath.Join(e.dataDir, "state", "host-id"))
		require.NoError(t, err)
		assert.Equal(t, string(id), string(id2))
	})
}

func TestInitWithoutToken(t *testing.T) {
	e := newEnv(t)
	out := e.ok("init")
	assert.Contains(t, out, "none yet")
	assert.Contains(t, out, "GITHUB_TOKEN")
}

func TestInitTokenFile(t *testing.T) {
	e := newEnv(t)
	cfg := filepath.Join(e.home, "rm.toml")
	e.ok("--config", cfg, "init", "--no-check", "--token-file", "/etc/rm/token", "--github-url", "https://ghes.example.com")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(b), `token_file = "/etc/rm/token"`)
	assert.Contains(t, string(b), `url = "https://ghes.example.com"`)
}

func TestConfigErrors(t *testing.T) {
	e := newEnv(t)
	cfg := filepath.Join(e.home, "bad.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[github]\nurl = \"https://github.com\"\ntoken_evn = \"X\"\n"), 0o600))
	stderr := e.fails(app.ExitInvalid, "--config", cfg, "policy", "list")
	assert.Contains(t, stderr, "bad.toml:3")
	assert.Contains(t, stderr, "github.token_evn")

	stderr = e.fails(app.ExitInvalid, "--config", filepath.Join(e.home, "missing.toml"), "policy", "list")
	assert.Contains(t, stderr, "runner-manager init")

	t.Setenv("RUNNER_MANAGER_LOG_FORMAT", "yaml")
	stderr = e.fails(app.ExitInvalid, "policy", "list")
	assert.Contains(t, stderr, "RUNNER_MANAGER_LOG_FORMAT")
}

// The data directory comes from the flag over the environment over the file.
func TestDataDirPrecedence(t *testing.T) {
	e := newEnv(t)
	fileDir := filepath.Join(e.home, "from-file")
	envDir := filepath.Join(e.home, "from-env")
	flagDir := filepath.Join(e.home, "from-flag")
	cfg := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
	require.NoError(t, os.WriteFile(cfg, []byte("data_dir = \""+fileDir+"\"\n"), 0o600))
	add := []string{"policy", "add", "p", "--repo", "o/r", "--scale-set", "s"}
	for _, dir := range []string{fileDir, envDir, flagDir} {
		require.NoError(t, os.Mkdir(dir, 0o700))
	}

	tests := []struct {
		name string
		env  string
		flag string
		want string
	}{
		{"file", "", "", fileDir},
		{"env", envDir, "", envDir},
		{"flag", envDir, flagDir, flagDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("RUNNER_MANAGER_DATA_DIR", tt.env)
			}
			args := add
			if tt.flag != "" {
				args = append([]string{"--data-dir", tt.flag}, add...)
			}
			r := e.runRaw(args...)
			require.Equal(t, 0, r.code, r.stderr)
			_, err := os.Stat(filepath.Join(tt.want, "journal.db"))
			require.NoError(t, err)
		})
	}
}

// One journal: init's next steps carry the --config it was given (the
// file records the data directory), a command that writes refuses a data
// directory that does not exist, and init --force keeps the data_dir.
func TestOneJournal(t *testing.T) {
	e := newEnv(t).noDataDir()
	cfg := filepath.Join(e.home, "my config.toml")
	out := e.ok("--config", cfg, "init", "--no-check")
	assert.Contains(t, out, "  runner-manager --config '"+cfg+"' policy add home --repo OWNER/REPO")
	assert.Contains(t, out, "  runner-manager --config '"+cfg+"' run ")

	t.Run("a missing data dir is refused", func(t *testing.T) {
		other := filepath.Join(e.home, "typo")
		t.Setenv("GITHUB_TOKEN", "ghp_unused") // the data dir is refused before GitHub is asked
		for _, args := range [][]string{
			{"policy", "add", "p", "--repo", "o/r", "--scale-set", "s", "--offline"},
			{"runner", "install", "--repo", "o/r"},
		} {
			r := e.runRaw(append([]string{"--config", cfg, "--data-dir", other}, args...)...)
			assert.Equal(t, app.ExitLocalState, r.code, r.stderr)
			assert.Contains(t, r.stderr, "data dir "+other+" does not exist: set this host up with `runner-manager init`", args)
			_, err := os.Stat(other)
			assert.ErrorIs(t, err, os.ErrNotExist, args)
		}
	})
	t.Run("force keeps data_dir", func(t *testing.T) {
		kept := filepath.Join(e.home, "kept")
		require.NoError(t, os.WriteFile(cfg, []byte("data_dir = \""+kept+"\"\n"), 0o600))
		e.runRaw("--config", cfg, "init", "--no-check", "--force")
		b, err := os.ReadFile(cfg)
		require.NoError(t, err)
		assert.Contains(t, string(b), `data_dir = "`+kept+`"`)
		_, err = os.Stat(filepath.Join(kept, "journal.db"))
		assert.NoError(t, err)
	})
}

// init's flags are checked as themselves: an error names the flag and
// its value, not a line of a file init writes.
func TestInitFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--github-url", "ftp://x"}, `--github-url: github.url: "ftp://x" is not an http(s) URL`},
		{[]string{"--token-env", "1 BAD"}, `--token-env: github.token_env: "1 BAD" is not an environment variable name`},
	} {
		e := newEnv(t)
		stderr := e.fails(app.ExitInvalid, append([]string{"init", "--no-check"}, tt.args...)...)
		assert.Contains(t, stderr, tt.want)
		assert.NotContains(t, stderr, ".toml")
		_, err := os.Stat(filepath.Join(e.home, "config", "runner-manager", "config.toml"))
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
	}
}
