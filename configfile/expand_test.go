package configfile_test

import (
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/configfile"
)

func TestExpandPath(t *testing.T) {
	vars := env(map[string]string{"HOME": "/home/u", "STATE": "/srv/state", "EMPTY": "", "A_1": "a", "TILDE": "~/$HOME"})
	tests := []struct {
		name, in, base, want, err string
	}{
		{name: "empty", in: "", want: ""},
		{name: "absolute", in: "/var/lib/rm", want: "/var/lib/rm"},
		{name: "tilde", in: "~", want: "/home/u"},
		{name: "tilde slash", in: "~/rm/data", want: "/home/u/rm/data"},
		{name: "tilde not leading", in: "/a/~/b", want: "/a/~/b"},
		{name: "var", in: "$STATE/rm", want: "/srv/state/rm"},
		{name: "braced var", in: "${STATE}rm", want: "/srv/staterm"},
		{name: "var with digits", in: "/x/$A_1/y", want: "/x/a/y"},
		{name: "var then tilde kept", in: "$STATE/~", want: "/srv/state/~"},
		{name: "var value not read again", in: "$TILDE/x", want: "~/$HOME/x"},
		{name: "tilde then var", in: "~/$A_1", want: "/home/u/a"},
		{name: "var giving tilde", in: "$HOME/.rm", want: "/home/u/.rm"},
		{name: "dollar dollar", in: "/x/$$y", want: "/x/$y"},
		{name: "lone dollar", in: "/x/$", want: "/x/$"},
		{name: "dollar not a name", in: "/x/$-y", want: "/x/$-y"},
		{name: "relative to base", in: "data", base: "/etc/rm", want: "/etc/rm/data"},
		{name: "dot relative to base", in: "./a/../b", base: "/etc/rm", want: "/etc/rm/b"},
		{name: "absolute ignores base", in: "/d", base: "/etc/rm", want: "/d"},
		{name: "tilde ignores base", in: "~/d", base: "/etc/rm", want: "/home/u/d"},
		{name: "relative without base", in: "data", want: "data"},
		{name: "unset var", in: "$NOPE/rm", err: "$NOPE is not set"},
		{name: "unset braced var", in: "${NOPE}/rm", err: "$NOPE is not set"},
		{name: "empty var", in: "$EMPTY/rm", err: "$EMPTY is empty"},
		{name: "unclosed brace", in: "${STATE/rm", err: "without its closing }"},
		{name: "bad braced name", in: "${1X}/rm", err: "is not a variable name"},
		{name: "unknown user", in: "~no-such-user-rm-test/x", err: `no user "no-such-user-rm-test"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := configfile.ExpandPath(tt.in, tt.base, vars)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("no home", func(t *testing.T) {
		_, err := configfile.ExpandPath("~/x", "", env(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "$HOME is not set to a full path")
	})
	t.Run("tilde user", func(t *testing.T) {
		u, err := user.Current()
		if err != nil || u.Username == "" || u.HomeDir == "" {
			t.Skip("no current user to look up")
		}
		got, err := configfile.ExpandPath("~"+u.Username+"/x", "", vars)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(u.HomeDir, "x"), got)
	})
}

func TestLoadExpandsPaths(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "etc", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
	require.NoError(t, os.WriteFile(cfg, []byte(`data_dir = "state"
[github]
token_file = "~/secrets/gh"
[store]
url = "postgres://rm@db/rm"
password_file = "${SECRETS}/pg"
`), 0o600))
	vars := map[string]string{"HOME": "/home/u", "SECRETS": "/run/secrets"}

	// Loaded from another directory: the relative data_dir is beside the
	// file, not in the current directory.
	t.Chdir(t.TempDir())
	c, err := configfile.Load(configfile.Sources{Path: cfg, Explicit: true, LookupEnv: env(vars)})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "etc", "state"), c.DataDir)
	assert.Equal(t, "/home/u/secrets/gh", c.GitHub.TokenFile)
	assert.Equal(t, "/run/secrets/pg", c.Store.PasswordFile)

	t.Run("relative file path", func(t *testing.T) {
		t.Chdir(dir)
		c, err := configfile.Load(configfile.Sources{Path: filepath.Join("etc", "config.toml"), Explicit: true, LookupEnv: env(vars)})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "etc", "state"), c.DataDir)
	})
	t.Run("env keeps the current directory", func(t *testing.T) {
		e := map[string]string{"HOME": "/home/u", "SECRETS": "/s", "RUNNER_MANAGER_DATA_DIR": "rel", "RUNNER_MANAGER_GITHUB_TOKEN_FILE": "~/t"}
		c, err := configfile.Load(configfile.Sources{Path: cfg, Explicit: true, LookupEnv: env(e)})
		require.NoError(t, err)
		assert.Equal(t, "rel", c.DataDir)
		assert.Equal(t, "/home/u/t", c.GitHub.TokenFile)
	})
	t.Run("flag keeps the current directory", func(t *testing.T) {
		c, err := configfile.Load(configfile.Sources{Path: cfg, Explicit: true, LookupEnv: env(vars),
			Flags: map[string]configfile.FlagValue{"data_dir": {Value: "~/flag", Name: "--data-dir"}}})
		require.NoError(t, err)
		assert.Equal(t, "/home/u/flag", c.DataDir)
	})
	t.Run("unset variable", func(t *testing.T) {
		_, err := configfile.Load(configfile.Sources{Path: cfg, Explicit: true, LookupEnv: env(map[string]string{"HOME": "/home/u"})})
		require.Error(t, err)
		var ce *configfile.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, cfg+":6", ce.Where)
		assert.Equal(t, "store.password_file", ce.Key)
		assert.Equal(t, cfg+`:6: store.password_file: "${SECRETS}/pg": $SECRETS is not set (set it, or write the path without it)`, err.Error())
	})
}

func TestTemplateDataDirExpands(t *testing.T) {
	// The template's example data_dir, uncommented, means the default.
	p := writeFile(t, "data_dir = \"~/.local/state/runner-manager\"\n")
	c, err := configfile.Load(configfile.Sources{Path: p, Explicit: true, LookupEnv: env(map[string]string{"HOME": "/home/u"})})
	require.NoError(t, err)
	want, err := configfile.DefaultDataDir(env(map[string]string{"HOME": "/home/u"}))
	require.NoError(t, err)
	assert.Equal(t, want, c.DataDir)
}

// TestTemplateExamplesWork: every example the template shows commented
// out, uncommented (all at once: the App's keys go together), loads and
// means what it says; the template showed data_dir = "~/…", which made a
// literal ~ directory.
func TestTemplateExamplesWork(t *testing.T) {
	example := regexp.MustCompile(`^# ([a-z_]+ = .*)$`)
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(configfile.Template(configfile.TemplateData{}), "\n") {
		if m := example.FindStringSubmatch(line); m != nil {
			line = m[1]
			n++
		}
		b.WriteString(line + "\n")
	}
	require.GreaterOrEqual(t, n, 10, "the template's examples were not found")
	p := writeFile(t, b.String())
	c, err := configfile.Load(configfile.Sources{Path: p, Explicit: true, LookupEnv: env(map[string]string{"HOME": "/home/u"})})
	require.NoError(t, err, b.String())
	assert.Equal(t, "/home/u/.local/state/runner-manager", c.DataDir)
	assert.Equal(t, "/etc/runner-manager/token", c.GitHub.TokenFile)
	assert.Equal(t, "/etc/runner-manager/app.pem", c.GitHub.PrivateKeyFile)
	assert.Equal(t, "/etc/runner-manager/store-password", c.Store.PasswordFile)
	assert.Equal(t, "https://ghes.example.com/api/v3", c.GitHub.APIURL)
}
