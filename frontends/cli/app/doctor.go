package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile/daemon/config"
	"github.com/runner-manager/runner-manager/reconcile/daemonapi"
	"github.com/runner-manager/runner-manager/store"
)

// DoctorCmd checks the setup.
type DoctorCmd struct {
	Fix bool `help:"Repair what can be: the data directory's mode, leftover registrations, attempt directories, runner processes and message sessions (not while the daemon runs)."`
}

// Help is the long help of doctor.
func (c *DoctorCmd) Help() string {
	return `doctor checks, and says how to fix: the configuration, the data directory
(mode 0700, the journal's integrity), free disk against the floor, memory
against the reserve, the installed runner (present, not older than what
GitHub offers), the GitHub credentials and their permissions on every
policy's scope, and leftovers: registrations of this host that no live
attempt owns, attempt directories of ended attempts, runner processes no
live attempt owns, and scale-set message sessions this host's daemon left
open (GitHub refuses a new session while one exists). With --fix it
removes the leftovers (only while the daemon is not running: the daemon
reaps them itself).

It exits with status 1 when a check failed.`
}

// Run checks.
func (c *DoctorCmd) Run(ctx context.Context, a *App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	var checks []check
	add := func(ch ...check) {
		for _, x := range ch {
			a.printf("%s\n", x)
		}
		checks = append(checks, ch...)
	}
	what := "configuration"
	if cfg.Path != "" {
		what += " " + cfg.Path
	} else {
		what += ": defaults (no file; `runner-manager init` writes one)"
	}
	add(check{OK: true, What: what})

	// The data directory.
	fi, err := os.Stat(cfg.DataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		add(check{What: "data directory " + cfg.DataDir, Fix: "it does not exist: run `runner-manager init`"})
		return doctorResult(checks)
	case err != nil:
		add(check{What: "data directory " + cfg.DataDir, Fix: err.Error()})
		return doctorResult(checks)
	case fi.Mode().Perm()&0o077 != 0 && c.Fix:
		if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
			add(check{What: "data directory mode", Fix: err.Error()})
		} else {
			add(check{OK: true, What: fmt.Sprintf("data directory %s: mode %04o tightened to 0700", cfg.DataDir, fi.Mode().Perm())})
		}
	case fi.Mode().Perm()&0o077 != 0:
		add(check{Warn: true, What: fmt.Sprintf("data directory %s is mode %04o", cfg.DataDir, fi.Mode().Perm()),
			Fix: fmt.Sprintf("others may read runner logs: chmod 700 %s (or doctor --fix)", cfg.DataDir)})
	default:
		add(check{OK: true, What: "data directory " + cfg.DataDir})
	}
	st, err := a.ExistingStore(ctx)
	if err != nil {
		add(check{What: "journal", Fix: err.Error()})
		return doctorResult(checks)
	}
	if ic, ok := st.(interface{ IntegrityCheck(context.Context) error }); ok {
		if err := ic.IntegrityCheck(ctx); err != nil {
			add(check{What: "journal integrity", Fix: err.Error()})
		} else {
			add(check{OK: true, What: "journal integrity"})
		}
	}

	// Disk and memory.
	if free, err := platform.DiskFree(cfg.DataDir); err != nil {
		add(check{Warn: true, What: "free disk", Fix: err.Error()})
	} else if free < cfg.Admission.DiskFloor.Bytes() {
		add(check{What: fmt.Sprintf("free disk: %s, below the floor of %s", config.FormatBytes(free), cfg.Admission.DiskFloor),
			Fix: "no runner starts until there is more: free space, or lower [admission] disk_floor"})
	} else {
		add(check{OK: true, What: fmt.Sprintf("free disk: %s (floor %s)", config.FormatBytes(free), cfg.Admission.DiskFloor)})
	}
	if total, _, err := platform.HostMemory(); err != nil {
		add(check{Warn: true, What: "host memory", Fix: err.Error()})
	} else if total <= cfg.Admission.MemoryReserve.Bytes() {
		add(check{What: fmt.Sprintf("memory: %s, not more than the reserve of %s", config.FormatBytes(total), cfg.Admission.MemoryReserve),
			Fix: "no runner can be admitted: lower [admission] memory_reserve"})
	} else {
		add(check{OK: true, What: fmt.Sprintf("memory: %s, of which %s reserved", config.FormatBytes(total), cfg.Admission.MemoryReserve)})
	}

	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	policies, err := st.Policies(ctx)
	if err != nil {
		return err
	}
	var mine []rm.Policy
	for _, p := range policies {
		if p.IsOwnedBy(host.ID) {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		add(check{Warn: true, What: "policies: none for this host", Fix: "add one: runner-manager policy add NAME --repo OWNER/REPO --scale-set NAME"})
	} else {
		add(check{OK: true, What: fmt.Sprintf("policies: %d for this host", len(mine))})
	}

	// Runners.
	installed, installErr := platform.NewestRunner(filepath.Join(cfg.DataDir, runnersDir))
	needsInstalled := false
	for _, p := range mine {
		if p.RunnerDir == "" {
			needsInstalled = true
		} else if _, err := os.Stat(listenerPath(p.RunnerDir)); err != nil {
			add(check{What: fmt.Sprintf("policy %s: runner dir %s", p.Name, p.RunnerDir),
				Fix: "it holds no runner: policy edit " + p.Name + " --runner-dir DIR, or runner install"})
		}
	}
	switch {
	case installErr != nil && needsInstalled:
		add(check{What: "installed runner", Fix: installErr.Error()})
	case installErr == nil:
		add(check{OK: true, What: "installed runner " + filepath.Base(installed)})
	}
	deprecated, err := st.Attempts(ctx, store.AttemptFilter{Since: time.Now().Add(-7 * 24 * time.Hour), States: []rm.AttemptState{rm.StateFailed}, Limit: 200})
	if err == nil {
		for _, at := range deprecated {
			if at.ExitCode != nil && *at.ExitCode == 7 {
				add(check{What: "runner version", Fix: "a runner exited 7 (version deprecated) on " + at.EndedAt.Local().Format(time.DateTime) + ": run `runner-manager runner install`"})
				break
			}
		}
	}

	// GitHub.
	scopes, err := a.policyScopes(ctx)
	if err != nil {
		return err
	}
	client, err := a.GitHub()
	if err != nil {
		add(check{What: "GitHub credentials", Fix: err.Error()})
		return doctorResult(checks)
	}
	ghChecks := checkGitHub(ctx, client, scopes)
	add(ghChecks...)
	if installErr == nil && len(scopes) > 0 && ghChecks[0].OK {
		if _, offered, err := offeredRunner(ctx, client, scopes[0]); err == nil {
			if have := filepath.Base(installed); versionLess(have, offered) {
				add(check{Warn: true, What: fmt.Sprintf("installed runner %s is older than the %s GitHub offers", have, offered),
					Fix: "GitHub stops old runners: run `runner-manager runner install`"})
			}
		}
	}

	// Leftovers.
	daemonUp := false
	if d, err := a.Daemon(); err == nil {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := d.Status(qctx)
		cancel()
		daemonUp = err == nil
		if err != nil && !errors.Is(err, daemonapi.ErrNotRunning) {
			add(check{Warn: true, What: "daemon", Fix: err.Error()})
		}
	}
	if daemonUp {
		add(check{OK: true, What: "daemon running (it reaps leftovers itself: --fix leaves them to it)"})
	} else {
		add(check{OK: true, What: "daemon not running"})
	}
	fix := c.Fix && !daemonUp
	live := map[string]bool{}
	liveIDs := map[rm.AttemptID]bool{}
	for _, p := range mine {
		as, err := st.ActiveAttempts(ctx, p.ID)
		if err != nil {
			return err
		}
		for _, at := range as {
			live[at.RunnerName] = true
			liveIDs[at.ID] = true
		}
	}
	add(c.leftoverRegistrations(ctx, client, host, mine, live, fix)...)
	add(leftoverDirs(cfg.DataDir, liveIDs, fix, daemonUp)...)
	add(leftoverProcesses(cfg.DataDir, liveIDs, fix, daemonUp)...)
	add(staleSessions(ctx, st, client, host, fix, daemonUp)...)
	return doctorResult(checks)
}

func doctorResult(checks []check) error {
	n := 0
	for _, c := range checks {
		if !c.OK && !c.Warn {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d check(s) failed: see above", n)
	}
	return nil
}

// leftoverRegistrations finds this host's registrations (by name prefix)
// that no live attempt owns, per scope; fix removes them (a busy one is
// left: it finishes its job).
func (c *DoctorCmd) leftoverRegistrations(ctx context.Context, client *github.Client, host rm.Host, policies []rm.Policy, live map[string]bool, fix bool) []check {
	prefix := rm.RunnerNamePrefix(host.ID)
	seen := map[string]bool{}
	var out []check
	for _, p := range policies {
		key := p.Target.Scope.String() + "/" + p.Target.RunnerGroup
		if seen[key] {
			continue
		}
		seen[key] = true
		// Listing is the same REST call in both modes.
		lt, err := rm.NewLabelTarget(p.Target.Scope, p.Target.RunnerGroup, []string{"self-hosted"})
		if err != nil {
			continue
		}
		t, err := github.NewClassicTarget(client, lt, github.ClassicOptions{NamePrefix: prefix})
		if err != nil {
			out = append(out, check{Warn: true, What: "registrations of " + p.Target.Scope.String(), Fix: err.Error()})
			continue
		}
		runners, err := t.Runners(ctx, prefix)
		if err != nil {
			out = append(out, check{Warn: true, What: "registrations of " + p.Target.Scope.String(), Fix: err.Error()})
			continue
		}
		var left []github.Runner
		for _, r := range runners {
			if !live[r.Name] {
				left = append(left, r)
			}
		}
		what := fmt.Sprintf("registrations of %s: %d of this host, %d leftover", p.Target.Scope, len(runners), len(left))
		if len(left) == 0 {
			out = append(out, check{OK: true, What: what})
			continue
		}
		if !fix {
			var names []string
			for _, r := range left {
				names = append(names, r.Name)
			}
			out = append(out, check{Warn: true, What: what, Fix: "remove them with doctor --fix (daemon stopped): " + strings.Join(names, ", ")})
			continue
		}
		removed := 0
		for _, r := range left {
			if err := t.RemoveRunner(ctx, r.ID); err == nil {
				removed++
			}
		}
		out = append(out, check{OK: removed == len(left), Warn: removed < len(left), What: fmt.Sprintf("%s: removed %d", what, removed),
			Fix: "some are busy with a job: they go when it ends"})
	}
	return out
}

// leftoverDirs finds attempt directories of attempts that are not live.
func leftoverDirs(dataDir string, live map[rm.AttemptID]bool, fix, daemonUp bool) []check {
	entries, err := os.ReadDir(filepath.Join(dataDir, "attempts"))
	if err != nil {
		return nil
	}
	var left []string
	for _, e := range entries {
		id, err := rm.ParseAttemptID(e.Name())
		if err != nil || id.IsZero() || live[id] || !e.IsDir() {
			continue // .failed/ holds failed attempts kept for a while
		}
		left = append(left, e.Name())
	}
	what := fmt.Sprintf("attempt directories: %d leftover", len(left))
	switch {
	case len(left) == 0:
		return []check{{OK: true, What: what}}
	case daemonUp:
		return []check{{OK: true, What: what + " (the running daemon may be using them)"}}
	case !fix:
		return []check{{Warn: true, What: what, Fix: "remove them with doctor --fix"}}
	}
	removed := 0
	for _, name := range left {
		if os.RemoveAll(filepath.Join(dataDir, "attempts", name)) == nil {
			removed++
		}
	}
	return []check{{OK: removed == len(left), Warn: removed < len(left), What: fmt.Sprintf("%s: removed %d", what, removed)}}
}

// versionLess compares dotted versions.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			fmt.Sscan(pb[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// staleSessions finds the scale-set message sessions the journal says this
// host opened while its daemon is not running: a daemon killed without
// closing them left them at GitHub, where they refuse any new session of
// their scale set. fix deletes them at GitHub, by id, and in the journal.
// Sessions of other hosts are never touched.
func staleSessions(ctx context.Context, st store.Store, client *github.Client, host rm.Host, fix, daemonUp bool) []check {
	all, err := st.Sessions(ctx)
	if err != nil {
		return []check{{Warn: true, What: "message sessions", Fix: err.Error()}}
	}
	var mine []store.ScaleSetSession
	for _, se := range all {
		if se.HostID == host.ID.String() || (se.HostID == "" && se.Owner == sessionOwner(host)) {
			mine = append(mine, se)
		}
	}
	what := fmt.Sprintf("message sessions: %d of this host", len(mine))
	switch {
	case len(mine) == 0:
		return []check{{OK: true, What: what}}
	case daemonUp:
		return []check{{OK: true, What: what + " (the running daemon holds them)"}}
	case !fix:
		var names []string
		for _, se := range mine {
			names = append(names, fmt.Sprintf("scale set %d in %s (session %s, opened %s)", se.ScaleSetID, se.Scope, se.SessionID, se.CreatedAt.Local().Format(time.DateTime)))
		}
		return []check{{Warn: true, What: what + ", left open by a daemon that is not running",
			Fix: "GitHub refuses a new session while one is open: delete them with doctor --fix (the daemon's next start does too): " + strings.Join(names, ", ")}}
	}
	removed := 0
	var errs []string
	for _, se := range mine {
		scope, err := rm.ParseScope(se.Scope)
		if err == nil {
			err = client.DeleteSession(ctx, scope, se.ScaleSetID, se.SessionID)
		}
		if err == nil {
			err = st.ForgetSession(ctx, se.ScaleSetID, se.SessionID)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("scale set %d: %v", se.ScaleSetID, err))
			continue
		}
		removed++
	}
	return []check{{OK: removed == len(mine), What: fmt.Sprintf("%s: deleted %d", what, removed), Fix: strings.Join(errs, "; ")}}
}
