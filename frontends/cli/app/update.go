package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/release"
)

// UpdateCmd replaces this program with a release's.
type UpdateCmd struct {
	To      string `help:"Install this release (1.2.3 or v1.2.3) instead of the newest." placeholder:"VERSION"`
	BaseURL string `help:"Where releases are published (default: the project's GitHub releases)." env:"RUNNER_MANAGER_BASE_URL" placeholder:"URL"`
	Check   bool   `help:"Say whether a newer release exists; change nothing."`
	Force   bool   `help:"Install even when the release is the version running."`
}

// Help is the long help of update.
func (c *UpdateCmd) Help() string {
	return `update reads the newest release's SHA256SUMS (or --to's), downloads this
platform's archive, checks its SHA-256 and only then replaces this program
(and runner-manager-tui beside it): each is written beside the old one and
renamed over it. A download that does not match its checksum replaces
nothing.

Then it hands over the running daemon of this data directory: it asks it
(SIGUSR2) to stop as it does for a restart, busy runners keeping their
jobs, and to start again in place on the new program, which re-adopts
them. A service keeps its pid, so systemd and launchd see no restart. On
Windows, restart the service (Restart-Service runner-manager).`
}

// handoverWait bounds how long update waits for the daemon to answer
// again on the new program.
const handoverWait = 60 * time.Second

// Run updates.
func (c *UpdateCmd) Run(ctx context.Context, a *App) error {
	exe, err := osExecutable()
	if err != nil {
		return fmt.Errorf("find this program's path: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	src := release.Source{BaseURL: c.BaseURL}
	r, err := src.Find(ctx, c.To, p)
	if err != nil {
		return fmt.Errorf("nothing updated: %w", err)
	}
	current := version()
	if r.Tag == current && !c.Force {
		a.printf("runner-manager %s is the release's version: nothing to do\n", current)
		return nil
	}
	if c.Check {
		a.printf("runner-manager %s is available (this is %s): runner-manager update\n", r.Tag, current)
		return nil
	}
	data, err := src.Download(ctx, r)
	if err != nil {
		return fmt.Errorf("nothing updated, %s is still %s: %w", exe, current, err)
	}
	replaced, err := release.InstallPrograms(data, p, exe)
	for _, path := range replaced {
		a.printf("%s: %s → %s\n", path, current, r.Tag)
	}
	if err != nil {
		return err
	}
	return a.handOver(ctx, r.Tag)
}

// handOver asks the daemon of this data directory, if one runs, to start
// again on the program now installed, and waits until it answers as
// version tag.
func (a *App) handOver(ctx context.Context, tag string) error {
	d, err := a.Daemon()
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := d.Status(qctx)
	cancel()
	if errors.Is(err, localapi.ErrNotRunning) || err == nil && st.Manager == nil {
		a.printf("no daemon runs on this data directory; the next start runs %s\n", tag)
		return nil
	}
	if err != nil {
		return fmt.Errorf("the programs are updated, but the daemon did not answer (%w): restart it to run %s", err, tag)
	}
	pid, since := st.Manager.PID, st.Manager.Since
	if err := askRestart(pid); err != nil {
		return fmt.Errorf("the programs are updated, but the daemon (pid %d) could not be asked to restart (%w): restart it, or its service, to run %s", pid, err, tag)
	}
	a.printf("asked the daemon (pid %d) to restart on %s; its busy runners keep their jobs\n", pid, tag)
	deadline := time.Now().Add(handoverWait)
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := d.Status(qctx)
		cancel()
		if err == nil && st.Manager != nil && st.Manager.Since.After(since) {
			if st.Manager.PID == pid && versionOf(st.Manager.Version) == tag {
				a.printf("the daemon (pid %d) runs %s\n", pid, tag)
				return nil
			}
			return fmt.Errorf("the daemon restarted as pid %d running %s, not %s: is it started from another copy of runner-manager?", st.Manager.PID, st.Manager.Version, tag)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon did not answer on %s within %s: see its log (runner-manager status)", tag, handoverWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// versionOf is the version alone of a Build's string ("v1.2.3 (commit …)").
func versionOf(s string) string {
	for i, r := range s {
		if r == ' ' {
			return s[:i]
		}
	}
	return s
}
