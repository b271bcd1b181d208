package app_test

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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

// serviceManager is a scripted service manager: the start commands run
// (failing when startErr is set) and `systemctl show` answers show.
type serviceManager struct {
	ran      []string
	startErr error
	show     string
}

func (m *serviceManager) run(ctx context.Context, argv []string) (string, error) {
	if argv[0] == "sh" {
		m.ran = append(m.ran, argv[2])
		return "", m.startErr
	}
	m.ran = append(m.ran, strings.Join(argv[:3], " "))
	return m.show, nil
}

// service install, once the configuration exists, enables and starts the
// service and ends when the service manager says it runs, or says why not.
func TestServiceInstallStarts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the commands tested here are systemd's")
	}
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	defer app.SetLingering(func(string) bool { return true })()
	running := "LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=77\n"
	for _, tc := range []struct {
		name     string
		m        serviceManager
		args     []string
		want     string
		code     int
		wantRan  []string
		noConfig bool
	}{
		{name: "Runs", m: serviceManager{show: running}, want: "ran: systemctl --user enable --now runner-manager\nthe service runs (pid 77)\n",
			wantRan: []string{"systemctl --user daemon-reload", "systemctl --user enable --now runner-manager", "systemctl --user show"}},
		{name: "StartFails", m: serviceManager{show: running, startErr: errors.New("exit status 1")}, code: app.ExitFailure,
			want: "`systemctl --user daemon-reload` failed (exit status 1)", wantRan: []string{"systemctl --user daemon-reload"}},
		{name: "Backoff", m: serviceManager{show: "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nExecMainCode=1\nExecMainStatus=2\n"},
			code: app.ExitFailure, want: "the service does not run: it is restart backoff (last: exit status 2); see its log (journalctl --user -u runner-manager)"},
		{name: "NoStart", m: serviceManager{}, args: []string{"--no-start"}, want: "Start it with:\n  systemctl --user daemon-reload\n"},
		{name: "NoConfig", m: serviceManager{}, noConfig: true, want: "does not exist yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			defer app.SetRunCommand(tc.m.run)()
			cfg := filepath.Join(e.home, "config.toml")
			if !tc.noConfig {
				require.NoError(t, os.WriteFile(cfg, []byte("[github]\n"), 0o600))
			}
			args := append([]string{"--config", cfg, "service", "install", "--user"}, tc.args...)
			if tc.noConfig {
				args = args[2:] // the default place, where nothing is yet
			}
			var out string
			if tc.code == 0 {
				out = e.ok(args...)
			} else {
				out = e.fails(tc.code, args...)
			}
			assert.Contains(t, out, tc.want)
			if tc.wantRan != nil {
				assert.Equal(t, tc.wantRan, tc.m.ran)
			}
			if tc.name == "NoStart" || tc.name == "NoConfig" {
				assert.Empty(t, tc.m.ran, "nothing is started")
			}
		})
	}
}

// service status says what the service manager says, and that the
// program was replaced after the service started.
func TestServiceStatus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the output tested here is systemd's")
	}
	prog := filepath.Join(t.TempDir(), "runner-manager")
	require.NoError(t, os.WriteFile(prog, []byte("new"), 0o755))
	started := time.Now().Add(-time.Hour).UTC().Format("Mon 2006-01-02 15:04:05 MST")
	for _, tc := range []struct {
		name, show string
		want       []string
	}{
		{"Stale", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nMainPID=4242\nNRestarts=3\n" +
			"ExecMainStartTimestamp=" + started + "\nExecStart={ path=" + prog + " ; argv[]=" + prog + " run ; ignore_errors=no }\n",
			[]string{"service:  running\n", "starts:   at login\n", "program:  " + prog + " (stale: replaced since the service started", "process:  pid 4242, since ", "restarts: 3\n",
				"daemon:   not answering on this data directory"}},
		{"Missing", "LoadState=not-found\nActiveState=inactive\nSubState=dead\n",
			[]string{"service:  not installed\n", "install it with: runner-manager service install --user\n"}},
		{"Failed", "LoadState=loaded\nActiveState=failed\nSubState=failed\nUnitFileState=disabled\nExecMainCode=2\nExecMainStatus=9\n",
			[]string{"service:  failed (last: killed by signal 9)\n", "starts:   manual\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			m := &serviceManager{show: tc.show}
			defer app.SetRunCommand(m.run)()
			out := e.ok("service", "status", "--user")
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, []string{"systemctl --user show"}, m.ran)
		})
	}
}
