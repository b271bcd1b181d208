package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform/service"
)

// The outputs below are in the form systemd 252 (`systemctl show
// --property=…`) and launchd (`launchctl print`, macOS 14) print them.

const systemdRunning = `LoadState=loaded
ActiveState=active
SubState=running
UnitFileState=enabled
MainPID=4242
ExecMainStartTimestamp=Mon 2026-12-07 20:15:03 UTC
ExecMainStatus=0
ExecMainCode=0
NRestarts=2
ExecStart={ path=/usr/local/bin/runner-manager ; argv[]=/usr/local/bin/runner-manager run ; ignore_errors=no ; start_time=[Mon 2026-12-07 20:15:03 UTC] ; stop_time=[n/a] ; pid=4242 ; code=(null) ; status=0/0 }
Result=success
`

const systemdBackoff = `LoadState=loaded
ActiveState=activating
SubState=auto-restart
UnitFileState=enabled
MainPID=0
ExecMainStartTimestamp=Mon 2026-12-07 20:15:03 UTC
ExecMainStatus=1
ExecMainCode=1
NRestarts=5
ExecStart={ path=/usr/local/bin/runner-manager ; argv[]=/usr/local/bin/runner-manager run ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }
Result=exit-code
`

const systemdFailed = `LoadState=loaded
ActiveState=failed
SubState=failed
UnitFileState=disabled
MainPID=0
ExecMainStartTimestamp=
ExecMainStatus=9
ExecMainCode=2
NRestarts=0
ExecStart={ path=/home/ann/.local/bin/runner-manager ; argv[]=/home/ann/.local/bin/runner-manager run ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }
Result=signal
`

const systemdStarting = `LoadState=loaded
ActiveState=activating
SubState=start
UnitFileState=enabled
MainPID=77
NRestarts=0
`

const systemdStopped = `LoadState=loaded
ActiveState=inactive
SubState=dead
UnitFileState=disabled
MainPID=0
ExecMainStartTimestamp=
ExecMainStatus=0
ExecMainCode=0
NRestarts=0
Result=success
`

const systemdMissing = `LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
MainPID=0
NRestarts=0
`

const launchdRunning = `system/io.github.runner-manager = {
	active count = 1
	path = /Library/LaunchDaemons/io.github.runner-manager.plist
	type = LaunchDaemon
	state = running

	program = /usr/local/bin/runner-manager
	arguments = {
		/usr/local/bin/runner-manager
		run
	}

	stdout path = /var/lib/runner-manager/daemon.log
	default environment = {
		PATH => /usr/bin:/bin:/usr/sbin:/sbin
	}

	environment = {
		RUNNER_MANAGER_CONFIG => /etc/runner-manager/config.toml
		XPC_SERVICE_NAME => io.github.runner-manager
	}

	domain = system
	runs = 3
	pid = 812
	immediate reason = inefficient
	forks = 0
	execs = 1
	last exit code = 1

	spawn type = daemon (3)
	properties = keepalive | runatload | inferred program
}
`

const launchdBackoff = `gui/501/io.github.runner-manager = {
	active count = 0
	path = /Users/ann/Library/LaunchAgents/io.github.runner-manager.plist
	type = LaunchAgent
	state = spawn scheduled

	program = /Users/ann/.local/bin/runner-manager
	domain = gui/501 [100005]
	runs = 7
	last exit code = 1
	properties = keepalive | runatload
}
`

const launchdStopped = `system/io.github.runner-manager = {
	active count = 0
	path = /Library/LaunchDaemons/io.github.runner-manager.plist
	state = not running

	program = /usr/local/bin/runner-manager
	runs = 1
	last exit code = 0
}
`

const launchdKilled = `system/io.github.runner-manager = {
	state = not running
	program = /usr/local/bin/runner-manager
	runs = 2
	last exit code = (never exited)
	last terminating signal = Killed: 9
}
`

const launchdMissing = `Bad request.
Could not find service "io.github.runner-manager" in domain for port
`

func TestParseStatus(t *testing.T) {
	started := time.Date(2026, 12, 7, 20, 15, 3, 0, time.UTC)
	for _, tc := range []struct {
		name, goos, out string
		user            bool
		want            service.Status
	}{
		{"systemd/running", "linux", systemdRunning, false, service.Status{State: service.Running, StartMode: "at boot",
			Program: "/usr/local/bin/runner-manager", PID: 4242, Since: started, Restarts: 2}},
		{"systemd/backoff", "linux", systemdBackoff, false, service.Status{State: service.RestartBackoff, StartMode: "at boot",
			Program: "/usr/local/bin/runner-manager", Since: started, Restarts: 5, LastExit: "exit status 1"}},
		{"systemd/failed-user", "linux", systemdFailed, true, service.Status{State: service.Failed, StartMode: "manual",
			Program: "/home/ann/.local/bin/runner-manager", LastExit: "killed by signal 9"}},
		{"systemd/starting", "linux", systemdStarting, true, service.Status{State: service.Starting, StartMode: "at login"}},
		{"systemd/stopped", "linux", systemdStopped, false, service.Status{State: service.Stopped, StartMode: "manual"}},
		{"systemd/missing", "linux", systemdMissing, false, service.Status{State: service.NotInstalled}},
		{"launchd/running", "darwin", launchdRunning, false, service.Status{State: service.Running, StartMode: "at boot",
			Program: "/usr/local/bin/runner-manager", PID: 812, Restarts: 2, LastExit: "exit status 1"}},
		{"launchd/backoff", "darwin", launchdBackoff, true, service.Status{State: service.RestartBackoff, StartMode: "at login",
			Program: "/Users/ann/.local/bin/runner-manager", Restarts: 6, LastExit: "exit status 1"}},
		{"launchd/stopped", "darwin", launchdStopped, false, service.Status{State: service.Stopped, StartMode: "at boot",
			Program: "/usr/local/bin/runner-manager", Restarts: 0}},
		{"launchd/killed", "darwin", launchdKilled, false, service.Status{State: service.Failed, StartMode: "at boot",
			Program: "/usr/local/bin/runner-manager", Restarts: 1, LastExit: "killed by signal Killed: 9"}},
		{"launchd/missing", "darwin", launchdMissing, false, service.Status{State: service.NotInstalled, Restarts: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := service.ParseStatus(tc.goos, tc.out, tc.user)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestStale(t *testing.T) {
	since := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	running := service.Status{State: service.Running, PID: 1, Since: since}
	require.True(t, running.Stale(since.Add(time.Minute)), "replaced after the start")
	require.False(t, running.Stale(since.Add(-time.Hour)), "older than the start")
	require.False(t, service.Status{State: service.Stopped, Since: since}.Stale(since.Add(time.Minute)), "nothing runs")
}

func TestStatusCommand(t *testing.T) {
	cmd, err := service.StatusCommand("darwin", true, 501)
	require.NoError(t, err)
	require.Equal(t, []string{"launchctl", "print", "gui/501/io.github.runner-manager"}, cmd)
	cmd, err = service.StatusCommand("linux", true, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"systemctl", "--user", "show", "runner-manager.service"}, cmd[:4])
	_, err = service.StatusCommand("windows", false, 0)
	require.Error(t, err)
}
