package service

import (
	"context"
	"fmt"
	"strings"
)

// Windows: the Service Control Manager (SCM) starts `runner-manager
// run` as a service (scm_windows.go). What it asks and what we answer is
// kept here, free of Windows' types, so that it is tested everywhere.

// Control is what the SCM asks of a running service.
type Control int

// The controls a service answers.
const (
	ControlInterrogate Control = iota // report the state again
	ControlStop                       // a person or `sc stop` stops it
	ControlShutdown                   // the machine shuts down
)

// Serve runs run as a service: it reports Starting, then Running while
// run runs; a stop or a shutdown cancels run's context (the daemon stops
// as on SIGTERM: busy runners keep their jobs) and reports Stopping until
// run returns. It returns run's error, nil after a requested stop.
func Serve(ctx context.Context, run func(context.Context) error, controls <-chan Control, report func(State)) error {
	report(Starting)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	report(Running)
	state := Running
	for {
		select {
		case err := <-done:
			report(Stopped)
			if state == Stopping {
				return nil
			}
			return err
		case c := <-controls:
			switch c {
			case ControlInterrogate:
				report(state)
			case ControlStop, ControlShutdown:
				if state != Stopping {
					state = Stopping
					report(Stopping)
					cancel()
				}
			}
		}
	}
}

// WindowsState is the SCM's word on a service (svc.State's values:
// SERVICE_STOPPED 1 … SERVICE_PAUSED 7) as a State.
func WindowsState(scmState uint32) State {
	switch scmState {
	case 1:
		return Stopped
	case 2:
		return Starting
	case 3:
		return Stopping
	case 4:
		return Running
	}
	return Unknown
}

// WindowsStartMode is the SCM's start type (SERVICE_AUTO_START 2,
// SERVICE_DEMAND_START 3, SERVICE_DISABLED 4) said as `service status`
// says it.
func WindowsStartMode(startType uint32) string {
	switch startType {
	case 0, 1, 2:
		return "at boot"
	case 3:
		return "manual"
	case 4:
		return "disabled"
	}
	return ""
}

// WindowsProgram is the program of a service's command line (its
// BinaryPathName: a quoted path, then arguments).
func WindowsProgram(cmdline string) string {
	cmdline = strings.TrimSpace(cmdline)
	if rest, ok := strings.CutPrefix(cmdline, `"`); ok {
		if i := strings.Index(rest, `"`); i >= 0 {
			return rest[:i]
		}
		return rest
	}
	if i := strings.IndexByte(cmdline, ' '); i >= 0 {
		return cmdline[:i]
	}
	return cmdline
}

// WindowsArgs are the arguments the SCM starts the service with: the
// configuration and data directory as flags (a service has no
// environment of its own), then run.
func WindowsArgs(spec Spec) []string {
	return []string{"--config", spec.ConfigPath, "--data-dir", spec.DataDir, "--log-format", "json", "run"}
}

// WindowsDataDir is a system service's data directory on Windows: short,
// at the root of the system drive, because a runner's work directory
// lies under it and jobs (node_modules, Go's module cache) make paths
// long; Windows' classic limit is 260 characters. SecureDir gives it an
// ACL for the service's account and administrators alone.
const WindowsDataDir = `C:\rm`

// WindowsDirSDDL is SecureDir's ACL: full control for LocalSystem (the
// service's account) and the Administrators group, inherited by what is
// created inside, and nothing inherited from above (P).
const WindowsDirSDDL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// errWindowsOnly is what the Windows-only functions return elsewhere.
var errWindowsOnly = fmt.Errorf("the Windows Service Control Manager exists only on Windows")
