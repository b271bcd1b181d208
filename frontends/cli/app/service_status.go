package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/platform/service"
)

// runCommand runs argv and returns its combined output (tests replace it:
// no service manager runs where they do).
var runCommand = func(ctx context.Context, argv []string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// serviceStartWait bounds how long install waits for the service to run.
const serviceStartWait = 15 * time.Second

// startService runs in's start commands and waits until the service
// manager says the service runs: install ends with it running, or says
// why not.
func (a *App) startService(ctx context.Context, in service.Install, user bool) error {
	for _, cmd := range in.Start {
		if out, err := runCommand(ctx, []string{"sh", "-c", cmd}); err != nil {
			return fmt.Errorf("wrote %s, but `%s` failed (%w): %s\nStart it with:\n  %s", in.Path, cmd, err,
				strings.TrimSpace(out), strings.Join(in.Start, "\n  "))
		}
		a.printf("ran: %s\n", cmd)
	}
	deadline := time.Now().Add(serviceStartWait)
	for {
		st, err := a.serviceState(ctx, user)
		if err != nil {
			return err
		}
		switch {
		case st.State == service.Running:
			a.printf("the service runs (pid %d)\n", st.PID)
			return nil
		case st.State == service.RestartBackoff || st.State == service.Failed || time.Now().After(deadline):
			return fmt.Errorf("the service does not run: it is %s%s; see its log (%s)", st.State, lastExit(st), serviceLogHint(user))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func lastExit(st service.Status) string {
	if st.LastExit == "" {
		return ""
	}
	return " (last: " + st.LastExit + ")"
}

func serviceLogHint(user bool) string {
	switch {
	case runtime.GOOS == "darwin":
		return "<data>/daemon.log"
	case user:
		return "journalctl --user -u " + service.Name
	}
	return "journalctl -u " + service.Name
}

// serviceState asks the service manager about the service.
func (a *App) serviceState(ctx context.Context, user bool) (service.Status, error) {
	if runtime.GOOS == "windows" {
		return service.QueryWindows(service.Name)
	}
	argv, err := service.StatusCommand(runtime.GOOS, user, os.Getuid())
	if err != nil {
		return service.Status{}, err
	}
	out, runErr := runCommand(ctx, argv)
	st := service.ParseStatus(runtime.GOOS, out, user)
	if st.State == service.Unknown && runErr != nil {
		return st, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), runErr, strings.TrimSpace(out))
	}
	return st, nil
}

// ServiceStatusCmd shows the service.
type ServiceStatusCmd struct {
	serviceFlags
}

// Help is the long help of service status.
func (c *ServiceStatusCmd) Help() string {
	return `Asks the service manager (systemctl show, launchctl print) about the
service: starting, running, stopping, stopped, restart backoff (it exited
and is started again after a delay) or failed; whether it starts at boot,
at login or by hand; the program it runs, and whether that file was
replaced since the service started (stale: restart it, or run update, which
hands it over). From the daemon itself, when it answers: its version and
when GitHub last answered it.`
}

// Run prints the service's status.
func (c *ServiceStatusCmd) Run(ctx context.Context, a *App) error {
	st, err := a.serviceState(ctx, c.User)
	if err != nil {
		return err
	}
	a.printf("service:  %s%s\n", st.State, lastExit(st))
	if st.State == service.NotInstalled {
		a.printf("install it with: runner-manager service install%s\n", map[bool]string{true: " --user"}[c.User])
		return nil
	}
	if st.StartMode != "" {
		a.printf("starts:   %s\n", st.StartMode)
	}
	// The daemon, when it answers: its start time serves where the
	// service manager does not tell it (launchd).
	d, err := a.Daemon()
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	live, liveErr := d.Status(qctx)
	cancel()
	if liveErr == nil && live.Manager != nil && st.Since.IsZero() && live.Manager.PID == st.PID {
		st.Since = live.Manager.Since
	}
	if st.Program != "" {
		line := st.Program
		if fi, err := os.Stat(st.Program); errors.Is(err, fs.ErrNotExist) {
			line += " (missing)"
		} else if err == nil && st.Stale(fi.ModTime()) {
			line += " (stale: replaced since the service started; restart it to run the new one)"
		}
		a.printf("program:  %s\n", line)
	}
	if st.PID != 0 {
		line := fmt.Sprintf("pid %d", st.PID)
		if !st.Since.IsZero() {
			line += ", since " + st.Since.Local().Format(time.DateTime)
		}
		a.printf("process:  %s\n", line)
	}
	if st.Restarts > 0 {
		a.printf("restarts: %d\n", st.Restarts)
	}
	switch {
	case liveErr != nil:
		a.printf("daemon:   not answering on this data directory (%v)\n", liveErr)
	case live.Manager != nil:
		line := "version " + versionOf(live.Manager.Version)
		if seen := live.Budget.SeenAt; !seen.IsZero() {
			line += fmt.Sprintf(", GitHub's REST API last answered %s ago", time.Since(seen).Round(time.Second))
		} else {
			line += ", no answer from GitHub's REST API yet"
		}
		a.printf("daemon:   %s\n", line)
	}
	return nil
}
