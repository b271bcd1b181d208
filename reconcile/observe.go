package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// observeJournal reads the served policies and their live attempts (of
// the host's, in one read).
func (p *pass) observeJournal(ctx context.Context) error {
	l := p.l
	l.mu.Lock()
	ids := slices.Clone(l.policyIDs)
	l.mu.Unlock()
	for _, id := range ids {
		pol, err := l.cfg.Store.Policy(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted: it had no live attempts (the store refuses otherwise)
		}
		if err != nil {
			return fmt.Errorf("read policy %s: %w", id, err)
		}
		if pol.Target.Key() != l.key || !pol.IsOwnedBy(l.cfg.Host.ID) {
			continue // moved to another target or host: another loop serves it
		}
		if n, ok := l.sharedSpares(); ok && pol.Fleet {
			// The fleet's holder spread the fleet's spares: this host
			// keeps its part, sized by the day within it.
			pol.Spare = n
		}
		p.policies = append(p.policies, pol)
	}
	slices.SortFunc(p.policies, func(a, b rm.Policy) int { return strings.Compare(a.Name, b.Name) })
	for i := range p.policies {
		p.byPolicy[p.policies[i].ID] = &p.policies[i]
	}
	if len(p.policies) == 0 {
		return nil
	}
	atts, err := l.cfg.Store.LiveAttempts(ctx, l.cfg.Host.ID)
	if err != nil {
		return fmt.Errorf("read the host's live attempts: %w", err)
	}
	// By policy (in name order), each one's oldest first; other loops'
	// attempts are left out.
	per := make(map[rm.PolicyID][]rm.Attempt)
	for _, a := range atts {
		if p.launchedElsewhere(a) {
			continue
		}
		per[a.Policy] = append(per[a.Policy], a)
	}
	for i := range p.policies {
		pol := &p.policies[i]
		for _, a := range per[pol.ID] {
			it := &item{a: a, pol: pol, log: l.log.With("policy", pol.Name, "attempt", a.ID.String())}
			p.items = append(p.items, it)
			p.byName[a.RunnerName] = it
		}
	}
	return nil
}

// launchedElsewhere reports whether a live attempt of a policy this host
// owns was launched by another host: its runner name is another host's
// (rm-<8 characters of that host's id>-<attempt id>). Only an attempt
// written by a host that still owned the policy when its pass began, and
// then lost it to a move, can be such; that host alone knows its runner, so
// this one never concludes, reaps or deregisters it. It is logged once.
func (p *pass) launchedElsewhere(a rm.Attempt) bool {
	name, own := a.RunnerName, rm.RunnerNamePrefix(p.l.cfg.Host.ID)
	if strings.HasPrefix(name, own) || len(name) != len(own)+len(a.ID.String()) ||
		!strings.HasPrefix(name, "rm-") || !strings.HasSuffix(name, "-"+a.ID.String()) {
		return false
	}
	l := p.l
	if !l.foreign[a.ID] {
		if l.foreign == nil {
			l.foreign = make(map[rm.AttemptID]bool)
		}
		l.foreign[a.ID] = true
		l.log.Warn("a live attempt of this host's policy was launched by another host; left to it",
			"attempt", a.ID.String(), "runner", name, "policy", a.Policy.String())
	}
	return true
}

// resolveProcesses finds each launched attempt's process: the one this
// manager started, or re-adopted from the journal's pid and start stamp
// after a restart, or found gone.
func (p *pass) resolveProcesses() {
	l := p.l
	for _, it := range p.items {
		if it.a.State == rm.StatePending || it.a.State == rm.StateRegistering {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		switch {
		case rt.proc != nil:
			it.proc = rt.proc
		case rt.goneAtAdopt:
			it.exited = true
			continue
		case it.a.PID == 0:
			p.markGone(it, "no process id in the journal")
			continue
		default:
			proc, err := l.cfg.launcherFor(it.pol).Adopt(it.a.ID, it.a.PID, it.a.ProcessStart)
			switch {
			case err == nil:
				l.tab.with(it.a.ID, func(r *runtime) { r.proc = proc })
				it.proc = proc
				it.log.Info("re-adopted runner process", "pid", it.a.PID)
			case errors.Is(err, rm.ErrProcessGone):
				p.markGone(it, "process gone")
				continue
			default:
				it.log.Warn("cannot look for the runner process; it keeps its slot", "pid", it.a.PID, "err", err)
				it.unresolved = true
				continue
			}
		}
		l.watchProcess(it.a.ID, it.proc)
		select {
		case <-it.proc.Done():
			it.exited = true
		default:
		}
	}
}

func (p *pass) markGone(it *item, why string) {
	p.l.tab.with(it.a.ID, func(r *runtime) {
		r.goneAtAdopt = true
		if r.exitSeenAt.IsZero() {
			r.exitSeenAt = p.now
		}
	})
	it.exited = true
	it.log.Info("runner ended while the manager was down", "pid", it.a.PID, "why", why)
}

// listRunners refreshes GitHub's list of this host's registrations when it
// is needed: at the first pass, older than RunnerListEvery while runners are
// live, once when the loop falls idle (to reap what the last runners left),
// every OrphanListEvery if set, before a scale-down, or to conclude a runner
// found gone after a restart. Each list costs a REST request; an idle loop
// makes none. A registrar whose list is shared by its scope's loops
// (rm.SharedRunnerLister) is asked for one no older than the reasons need
// (listBound), which a list another loop had sent may answer, and the list
// taken when the loop falls idle waits half an interval for one; the
// loop's listAt is always when its list was sent.
func (p *pass) listRunners(ctx context.Context) {
	l := p.l
	if p.quiet || l.reg.cannotList {
		return
	}
	age := p.now.Sub(l.listAt)
	live, scaleDown, needTrace := 0, false, false
	var traceAfter time.Time
	mayScaleDown := l.demandIsKnown() || l.draining.Load()
	for _, it := range p.items {
		if it.holdsSlot() {
			live++
		}
		if it.exited {
			if rt, _ := l.tab.get(it.a.ID); rt.goneAtAdopt && l.listAt.Before(rt.exitSeenAt) {
				needTrace = true
				if rt.exitSeenAt.After(traceAfter) {
					traceAfter = rt.exitSeenAt
				}
			}
		}
		if it.holdsSlot() && it.a.State == rm.StateIdle && (mayScaleDown || it.pol.Paused) {
			scaleDown = true // checked against demand below
		}
	}
	if scaleDown {
		wanted, _ := p.wanted()
		scaleDown = live > wanted && age >= l.cfg.ActiveRequeue
	}
	first := !l.listed
	refresh := live > 0 && age >= l.cfg.RunnerListEvery
	idle := live == 0 && !l.listedIdle
	orphan := l.cfg.OrphanListEvery > 0 && age >= l.cfg.OrphanListEvery
	if !first && !needTrace && !scaleDown && !refresh && !idle && !orphan {
		return
	}
	sl, shared := l.cfg.Target.Registrar.(rm.SharedRunnerLister)
	if shared && idle && !first && !needTrace && !scaleDown && !refresh && !orphan {
		// Fallen idle, the list is only for reaping: it waits up to half an
		// interval after the last conclusion (this pass's, when its last
		// runners are still to be concluded), for a list another loop of
		// the scope sends meanwhile (or for runners live again, which make
		// it needless).
		end := l.lastEnd
		for _, it := range p.items {
			if it.exited && !it.concluded {
				end = p.now
			}
		}
		if due := end.Add(l.cfg.RunnerListEvery / 2); p.now.Before(due) {
			p.deadline(due)
			return
		}
	}
	prefix := rm.RunnerNamePrefix(l.cfg.Host.ID)
	var (
		rs  []rm.Runner
		at  time.Time
		err error
	)
	if shared {
		rs, at, err = sl.RunnersSince(ctx, prefix, p.listBound(first, needTrace, scaleDown, refresh, idle, orphan, traceAfter))
	} else {
		at = l.cfg.Now()
		rs, err = l.cfg.Target.Registrar.Runners(ctx, prefix)
	}
	if errors.Is(err, rm.ErrCannotList) {
		// Scale-set runners: observeRunners looks each one up instead.
		l.log.Debug("the target cannot list its runners; looking each one up", "err", err)
		l.reg.cannotList = true
		return
	}
	if err != nil {
		p.githubErr(err, "list runners")
		return
	}
	p.githubOK()
	l.runners, l.listAt, l.listed, p.fresh = rs, at, true, true
	l.listedIdle = live == 0
}

// findRunner returns GitHub's newest word on an attempt's registration:
// its lookup, when newer than the list (or the target cannot list), else
// the list's entry.
func (p *pass) findRunner(a rm.Attempt) (rm.Runner, bool) {
	l := p.l
	if lk, ok := l.reg.looked[a.ID]; ok && (l.reg.cannotList || !lk.at.Before(l.listAt)) {
		return lk.runner, lk.found
	}
	for _, r := range l.runners {
		if (a.GitHubRunnerID != 0 && r.ID == a.GitHubRunnerID) || r.Name == a.RunnerName {
			return r, true
		}
	}
	return rm.Runner{}, false
}

// observeRunners moves attempts by GitHub's word (online → idle, busy →
// busy) and marks live runners whose registration GitHub says is gone
// (zombie candidates). A runner the list lacks is looked up before it
// counts as missing; a target that cannot list has each runner looked up
// (lookUpRunners).
func (p *pass) observeRunners(ctx context.Context) {
	l := p.l
	l.reg.prune(p.items)
	if l.reg.cannotList {
		p.lookUpRunners(ctx)
		return
	}
	var lacked []*item
	for _, it := range p.items {
		if !p.fresh || !it.holdsSlot() || it.proc == nil {
			continue
		}
		if r, found := p.findRunner(it.a); found {
			l.tab.with(it.a.ID, func(rt *runtime) { rt.missingSince = time.Time{} })
			p.sawRunner(ctx, it, r, r.Online)
			continue
		}
		if it.a.GitHubRunnerID != 0 && it.a.StartedAt.Before(l.listAt) && !p.running(it) {
			lacked = append(lacked, it)
		}
	}
	p.confirmMissing(ctx, lacked)
}
