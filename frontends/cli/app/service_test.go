package app_test

import (
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// service install --user says when systemd will not run the service
// without a login, and how to let it linger.
func TestServiceInstallUserLinger(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("lingering is systemd's")
	}
	u, err := user.Current()
	require.NoError(t, err)
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	for _, lingers := range []bool{false, true} {
		e := newEnv(t)
		var asked string
		restore := app.SetLingering(func(name string) bool { asked = name; return lingers })
		out := e.ok("service", "install", "--user")
		restore()
		assert.Equal(t, u.Username, asked)
		hint := "\nsystemd runs " + u.Username + "'s user services only while " + u.Username + " is logged in: the runners stop at logout and start again only at the next login.\n" +
			"To run it from boot, without a login, let it linger:\n  sudo loginctl enable-linger " + u.Username + "\n"
		if lingers {
			assert.NotContains(t, out, "loginctl")
		} else {
			assert.Contains(t, out, "  systemctl --user enable --now runner-manager\n"+hint)
		}
	}
	e := newEnv(t)
	defer app.SetLingering(func(string) bool { return false })()
	assert.NotContains(t, e.ok("service", "install", "--print", "--user"), "loginctl", "the file alone is printed")
}

// service uninstall leaves an enabled unit and says how to disable it.
func TestServiceUninstallEnabled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the unit tested here is systemd's")
	}
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	defer app.SetLingering(func(string) bool { return true })()
	e := newEnv(t)
	e.ok("service", "install", "--user")
	unit := filepath.Join(e.home, "config", "systemd", "user", "runner-manager.service")
	wants := filepath.Join(filepath.Dir(unit), "default.target.wants")
	require.NoError(t, os.MkdirAll(wants, 0o755))
	require.NoError(t, os.Symlink(unit, filepath.Join(wants, "runner-manager.service")))

	stderr := e.fails(1, "service", "uninstall", "--user")
	assert.Contains(t, stderr, "runner-manager.service is enabled (")
	assert.Contains(t, stderr, "disable and stop it first, then run `runner-manager service uninstall` again:\n  systemctl --user disable --now runner-manager\n")
	assert.FileExists(t, unit)

	require.NoError(t, os.Remove(filepath.Join(wants, "runner-manager.service")))
	assert.Equal(t, "removed "+unit+"\nIf it still runs, stop it, and make the service manager forget it:\n  systemctl --user stop runner-manager\n  systemctl --user daemon-reload\n",
		e.ok("service", "uninstall", "--user"))
}

// service install names where the service finds the token as the
// configuration says: the variable token_env names, or token_file.
func TestServiceInstallNamesTheTokenSource(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the environment file is systemd's")
	}
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	defer app.SetLingering(func(string) bool { return true })()
	for _, tc := range []struct {
		name, github, want, not, unit string
	}{
		{"Default", "", "as GITHUB_TOKEN=... (the variable token_env names)", "token_file", "# Put the token here as GITHUB_TOKEN=..."},
		{"TokenEnv", `token_env = "MY_TOKEN"`, "as MY_TOKEN=... (the variable token_env names)", "GITHUB_TOKEN", "# Put the token here as MY_TOKEN=..."},
		{"TokenFile", `token_file = "/etc/runner-manager/token"`, "The token is read from /etc/runner-manager/token (token_file)", "GITHUB_TOKEN", "credentials come from a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := filepath.Join(e.home, "config.toml")
			require.NoError(t, os.WriteFile(cfg, []byte("[github]\n"+tc.github+"\n"), 0o600))
			out := e.ok("--config", cfg, "service", "install", "--user")
			assert.Contains(t, out, tc.want)
			assert.NotContains(t, out, tc.not)
			units, err := filepath.Glob(filepath.Join(e.home, "*", "systemd", "user", "runner-manager.service"))
			require.NoError(t, err)
			require.Len(t, units, 1, out)
			unit, err := os.ReadFile(units[0])
			require.NoError(t, err)
			assert.Contains(t, string(unit), tc.unit, "the unit's comment names the variable the configuration reads")
			if tc.name != "Default" {
				assert.NotContains(t, string(unit), "GITHUB_TOKEN")
			}
		})
	}
}
