package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/doctor/check"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/store"
)

// leftovers finds what no live attempt owns; with Fix, and no daemon
// running, it removes it.
func (r *run) leftovers(ctx context.Context, st store.Store, client *github.Client, host rm.Host, mine []rm.Policy) error {
	daemonUp := false
	if r.DaemonRunning != nil {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		up, err := r.DaemonRunning(qctx)
		cancel()
		daemonUp = up && err == nil
		if err != nil {
			r.add(warn("daemon", "daemon", err.Error()))
		}
	}
	if daemonUp {
		r.add(ok("daemon", "daemon running (it reaps leftovers itself: --fix leaves them to it)"))
	} else {
		r.add(ok("daemon", "daemon not running"))
	}
	lo := leftovers{fix: r.Fix && !daemonUp, daemonUp: daemonUp, names: map[string]bool{}, ids: map[rm.AttemptID]bool{},
		live: map[rm.PolicyID][]rm.Attempt{}}
	for _, p := range mine {
		as, err := st.ActiveAttempts(ctx, p.ID)
		if err != nil {
			return fmt.Errorf("read the live attempts of policy %s: %w", p.Name, err)
		}
		for _, at := range as {
			lo.names[at.RunnerName] = true
			lo.ids[at.ID] = true
		}
		lo.live[p.ID] = as
	}
	r.add(lo.goneRunners(host, mine))
	r.add(lo.registrations(ctx, client, host, mine)...)
	for _, p := range mine {
		if p.Target.Mode() == rm.ModeScaleSet {
			r.add(lo.scaleSetRegistrations(ctx, st, client, host, p))
		}
	}
	// Processes before directories: a runner whose root is removed works
	// in a deleted directory, which is no data directory's.
	r.add(lo.processes(r.ProcRoot, r.DataDir))
	r.add(lo.dirs(r.DataDir))
	env := check.Env{DataDir: r.DataDir, Host: host, Policies: mine, Config: r.Config,
		Live: func(a rm.AttemptID) bool { return lo.ids[a] }, DaemonUp: lo.daemonUp, Fix: lo.fix}
	for _, b := range r.Backends {
		r.add(b.Doctor(ctx, env)...)
	}
	owner := ""
	if r.SessionOwner != nil {
		owner = r.SessionOwner(host)
	}
	r.add(lo.sessions(ctx, st, client, host, owner))
	r.add(scaleSets(ctx, st, client, host, r.Fix))
	return nil
}

// leftovers is what the live attempts own, and whether to remove the rest.
type leftovers struct {
	fix, daemonUp bool
	names         map[string]bool // runner names of live attempts
	ids           map[rm.AttemptID]bool
	live          map[rm.PolicyID][]rm.Attempt
}

// registrations finds this host's registrations of classic policies (by
// name prefix, in GitHub's REST runner list) that no live attempt owns,
// per scope and group; fix removes them (a busy one is left: it finishes
// its job). Scale-set runners are never in that list
// (actions/actions-runner-controller #2990): scaleSetRegistrations looks
// them up by name instead.
func (lo leftovers) registrations(ctx context.Context, client *github.Client, host rm.Host, policies []rm.Policy) []Check {
	const name = "registrations"
	prefix := rm.RunnerNamePrefix(host.ID)
	seen := map[string]bool{}
	var out []Check
	for _, p := range policies {
		if p.Target.Mode() == rm.ModeScaleSet {
			continue
		}
		key := p.Target.Scope.String() + "/" + p.Target.RunnerGroup
		if seen[key] {
			continue
		}
		seen[key] = true
		what := "registrations of " + p.Target.Scope.String()
		lt, err := rm.NewLabelTarget(p.Target.Scope, p.Target.RunnerGroup, []string{"self-hosted"})
		if err != nil {
			continue
		}
		t, err := github.NewClassicTarget(client, lt, github.ClassicOptions{NamePrefix: prefix})
		if err != nil {
			out = append(out, warn(name, what, err.Error()))
			continue
		}
		runners, err := t.Runners(ctx, prefix)
		if err != nil {
			out = append(out, warn(name, what, err.Error()))
			continue
		}
		var left []rm.Runner
		var names []string
		for _, r := range runners {
			if !lo.names[r.Name] {
				left, names = append(left, r), append(names, r.Name)
			}
		}
		what = fmt.Sprintf("%s: %d of this host, %d leftover", what, len(runners), len(left))
		switch {
		case len(left) == 0:
			out = append(out, ok(name, what))
			continue
		case !lo.fix:
			out = append(out, warn(name, what, "remove them with doctor --fix (daemon stopped): "+strings.Join(names, ", ")))
			continue
		}
		removed := 0
		for _, r := range left {
			if t.RemoveRunner(ctx, r.ID) == nil {
				removed++
			}
		}
		c := ok(name, fmt.Sprintf("%s: removed %d", what, removed))
		if removed < len(left) {
			c = warn(name, c.Detail, "some are busy with a job: they go when it ends")
		}
		out = append(out, c)
	}
	return out
}

// dirs finds attempt directories of attempts that are not live.
func (lo leftovers) dirs(dataDir string) Check {
	const name = "attempt-dirs"
	attempts := datadir.New(dataDir).Attempts()
	entries, err := os.ReadDir(attempts)
	if err != nil && !os.IsNotExist(err) {
		return warn(name, "attempt directories", err.Error())
	}
	var left []string
	for _, e := range entries {
		id, err := rm.ParseAttemptID(e.Name())
		if err != nil || id.IsZero() || lo.ids[id] || !e.IsDir() {
			continue // .failed/ holds failed attempts kept for a while
		}
		left = append(left, e.Name())
	}
	what := fmt.Sprintf("attempt directories: %d leftover", len(left))
	switch {
	case len(left) == 0:
		return ok(name, what)
	case lo.daemonUp:
		return ok(name, what+" (the running daemon may be using them)")
	case !lo.fix:
		return warn(name, what, "remove them with doctor --fix")
	}
	removed := 0
	for _, n := range left {
		if os.RemoveAll(filepath.Join(attempts, n)) == nil {
			removed++
		}
	}
	if removed < len(left) {
		return warn(name, fmt.Sprintf("%s: removed %d", what, removed), "")
	}
	return ok(name, fmt.Sprintf("%s: removed %d", what, removed))
}

// sessions finds the scale-set message sessions the journal says this host
// opened, while its daemon is not running: a daemon killed without closing
// them left them at GitHub, where they refuse any new session of their
// scale set. fix deletes them at GitHub, by id, and in the journal.
// Sessions of other hosts are never touched.
func (lo leftovers) sessions(ctx context.Context, st store.Store, client *github.Client, host rm.Host, owner string) Check {
	const name = "sessions"
	all, err := st.Sessions(ctx)
	if err != nil {
		return warn(name, "message sessions", err.Error())
	}
	var mine []rm.SessionRecord
	for _, se := range all {
		if se.HostID == host.ID.String() || (se.HostID == "" && owner != "" && se.Owner == owner) {
			mine = append(mine, se)
		}
	}
	what := fmt.Sprintf("message sessions: %d of this host", len(mine))
	switch {
	case len(mine) == 0:
		return ok(name, what)
	case lo.daemonUp:
		return ok(name, what+" (the running daemon holds them)")
	case !lo.fix:
		var names []string
		for _, se := range mine {
			names = append(names, fmt.Sprintf("scale set %d in %s (session %s, opened %s)", se.ScaleSetID, se.Scope, se.SessionID, se.CreatedAt.Local().Format(time.DateTime)))
		}
		return warn(name, what+", left open by a daemon that is not running",
			"GitHub refuses a new session while one is open: delete them with doctor --fix (the daemon's next start does too): "+strings.Join(names, ", "))
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
	what = fmt.Sprintf("%s: deleted %d", what, removed)
	if removed < len(mine) {
		return fail(name, what, strings.Join(errs, "; "))
	}
	return ok(name, what)
}
