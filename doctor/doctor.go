// Package doctor checks a host's setup and finds what a crash or a killed
// daemon left behind: the configuration, the data directory and its
// journal, disk and memory against admission's floor and reserve, the
// installed runner, the GitHub credentials on every policy's scope, each
// backend's own checks (Setup.Backends: the container engine and images,
// the VM programs, images and accelerator), and the leftovers
// (registrations, attempt directories, runner processes, each backend's,
// and scale-set message sessions no live attempt owns). With Fix it removes the
// leftovers, only while no daemon runs (a daemon reaps them itself). Live
// attempts whose runner is gone are reported, not concluded: their outcome
// is the engine's, and `run --once` concludes them.
// Programs print the checks; Run decides them.
package doctor

import (
	"context"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/doctor/check"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/store"
)

// Status is how a check came out (check.Status).
type Status = check.Status

// The statuses, from good to bad.
const (
	// OK: nothing to do.
	OK = check.OK
	// Warn: a problem that does not stop the manager.
	Warn = check.Warn
	// Fail: the manager cannot work until it is fixed.
	Fail = check.Fail
)

// Check is one finding (check.Check: the backends make theirs too).
type Check = check.Check

func ok(name, detail string) Check { return check.Ok(name, detail) }

func warn(name, detail, hint string) Check { return check.Warning(name, detail, hint) }

func fail(name, detail, hint string) Check { return check.Failure(name, detail, hint) }

// Failed counts the checks that failed.
func Failed(checks []Check) int { return check.Failed(checks) }

// Setup is what the checks look at. The journal, the host and the GitHub
// client are opened by functions, so that a check that cannot open one
// reports it instead of failing the run.
type Setup struct {
	// ConfigPath is the configuration file in use; "" for the defaults.
	ConfigPath string
	DataDir    string
	// MemoryReserve and DiskFloor are admission's, as configured.
	MemoryReserve, DiskFloor uint64
	// Journal opens the existing journal (an error if there is none).
	Journal func(ctx context.Context) (store.Store, error)
	// Host is this host, as recorded in the journal.
	Host func(ctx context.Context) (rm.Host, error)
	// GitHub returns a client with the configured credentials.
	GitHub func() (*github.Client, error)
	// DaemonRunning says whether a daemon serves the data directory; an
	// error is reported, and taken for "not running".
	DaemonRunning func(ctx context.Context) (bool, error)
	// SessionOwner is the owner name this host's daemon opens scale-set
	// message sessions with (sessions recorded without a host id are
	// matched by it).
	SessionOwner func(rm.Host) string
	// ProcRoot is the procfs to look for runner processes in ("": /proc).
	ProcRoot string
	// Config is the configuration in use, whose sections the backends'
	// checks read ([container] host, [vm] accel); nil for the defaults.
	Config *configfile.File
	// Backends are the backends' own checks (backend.Doctors: the
	// container engine and images, the VM programs, images and
	// accelerator, and what each left of attempts), made in order after
	// the host's leftovers of processes and directories.
	Backends []check.Doctor
	// Fix removes leftovers and tightens the data directory's mode.
	Fix bool
	// Report, if set, is given each check as soon as it is made.
	Report func(Check)
}

// Run makes the checks in order and returns them. It stops early when a
// later check could only fail for the same reason (no data directory, no
// journal, no credentials). Its error is not a failed check but a journal
// that cannot be read.
func Run(ctx context.Context, s Setup) ([]Check, error) {
	r := &run{Setup: s}
	err := r.all(ctx)
	return r.checks, err
}

// run is one doctor run: the setup and what it found so far.
type run struct {
	Setup
	checks []Check
}

func (r *run) add(cs ...Check) {
	for _, c := range cs {
		if r.Report != nil {
			r.Report(c)
		}
		r.checks = append(r.checks, c)
	}
}

func (r *run) all(ctx context.Context) error {
	if r.ConfigPath != "" {
		r.add(ok("config", "configuration "+r.ConfigPath))
	} else {
		r.add(ok("config", "configuration: defaults (no file; `runner-manager init` writes one)"))
	}
	if !r.dataDir() {
		return nil
	}
	st, err := r.Journal(ctx)
	if err != nil {
		r.add(fail("journal", "journal", err.Error()))
		return nil
	}
	if err := st.IntegrityCheck(ctx); err != nil {
		r.add(fail("journal-integrity", "journal integrity", err.Error()))
	} else {
		r.add(ok("journal-integrity", "journal integrity"))
	}
	r.add(r.disk(), r.memory())
	host, err := r.Host(ctx)
	if err != nil {
		return err
	}
	all, err := st.Policies(ctx)
	if err != nil {
		return fmt.Errorf("read the policies: %w", err)
	}
	mine := owned(all, host.ID)
	if len(mine) == 0 {
		r.add(warn("policies", "policies: none for this host", "add one: runner-manager policy add NAME --repo OWNER/REPO --scale-set NAME"))
	} else {
		r.add(ok("policies", fmt.Sprintf("policies: %d for this host", len(mine))))
	}
	r.warm(ctx, st, host, all)
	installed, installErr := r.runners(ctx, st, mine)
	client, err := r.GitHub()
	if err != nil {
		r.add(fail("github", "GitHub credentials", err.Error()))
		return nil
	}
	scopes := scopesOf(all)
	gh := GitHub(ctx, client, scopes)
	r.add(gh...)
	if installErr == nil && len(scopes) > 0 && gh[0].Status == OK {
		r.add(runnerVersion(ctx, client, scopes[0], installed)...)
	}
	return r.leftovers(ctx, st, client, host, mine)
}

// owned keeps host's policies.
func owned(ps []rm.Policy, host rm.HostID) []rm.Policy {
	var out []rm.Policy
	for _, p := range ps {
		if p.IsOwnedBy(host) {
			out = append(out, p)
		}
	}
	return out
}

// scopesOf lists the distinct scopes of policies, in order.
func scopesOf(ps []rm.Policy) []rm.Scope {
	var out []rm.Scope
	seen := map[rm.Scope]bool{}
	for _, p := range ps {
		if !seen[p.Target.Scope] {
			seen[p.Target.Scope] = true
			out = append(out, p.Target.Scope)
		}
	}
	return out
}
