package reconcile

import (
	"context"
	"errors"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// registry is what the loop learned of its runners' registrations beyond
// the last runner list: whether the target can list them at all, and each
// attempt's last lookup. The pass owns it (Loop.passMu).
//
// A zombie is a live process, not running a job, whose registration two
// lookups at least ZombieGrace apart said is gone (the first one sets the
// runtime's missingSince). One listing never makes one: a runner a list
// lacks is looked up before it counts as missing, and scale-set runners,
// which GitHub's REST list never carries, are looked up one by one.
type registry struct {
	// cannotList: the target offers no runner list (rm.ErrCannotList);
	// each live runner is looked up at most every RunnerListEvery.
	cannotList bool
	looked     map[rm.AttemptID]lookup
}

// lookup is GitHub's last answer on one attempt's registration.
type lookup struct {
	at     time.Time
	found  bool
	runner rm.Runner
}

// prune forgets the lookups of attempts the pass no longer holds.
func (r *registry) prune(items []*item) {
	if len(r.looked) == 0 {
		return
	}
	keep := make(map[rm.AttemptID]bool, len(items))
	for _, it := range items {
		if !it.concluded {
			keep[it.a.ID] = true
		}
	}
	for id := range r.looked {
		if !keep[id] {
			delete(r.looked, id)
		}
	}
}

// running reports whether the attempt's runner is running a job as far as
// the journal and GitHub's job words know: such a runner is never stopped
// as a zombie, whatever a list or a lookup says of its registration.
func (p *pass) running(it *item) bool {
	if it.a.State != rm.StateBusy && !it.a.Job.Known() {
		return false
	}
	rt, _ := p.l.tab.get(it.a.ID)
	return !rt.jobCompleted
}

// lookUp asks GitHub whether the attempt's registration still exists and
// notes the answer: found clears a missing mark (and, for a live runner,
// moves it by what the answer says: up is true where the service tells
// nothing of online), gone marks it missing. It reports false when GitHub
// failed (the pass stops calling).
func (p *pass) lookUp(ctx context.Context, it *item, up bool) bool {
	l := p.l
	at := l.cfg.Now()
	r, found, err := l.cfg.Target.Registrar.LookupRunner(ctx, it.a.GitHubRunnerID, it.a.RunnerName)
	if err != nil {
		p.githubErr(err, "look up runner "+it.a.RunnerName)
		return false
	}
	p.githubOK()
	if l.reg.looked == nil {
		l.reg.looked = make(map[rm.AttemptID]lookup)
	}
	l.reg.looked[it.a.ID] = lookup{at: at, found: found, runner: r}
	if found {
		l.tab.with(it.a.ID, func(rt *runtime) { rt.missingSince = time.Time{} })
		if it.holdsSlot() {
			p.sawRunner(ctx, it, r, up || r.Online)
		}
		return true
	}
	first := false
	l.tab.with(it.a.ID, func(rt *runtime) {
		if rt.stop == stopNone && rt.missingSince.IsZero() {
			rt.missingSince, first = at, true
		}
	})
	if first && it.holdsSlot() {
		it.log.Info("GitHub has no registration for this live runner; asking again after the zombie grace",
			"zombie_grace", l.cfg.ZombieGrace)
	}
	return true
}

// sawRunner moves a live attempt by GitHub's word on its registration:
// busy → busy, online (up) → idle.
func (p *pass) sawRunner(ctx context.Context, it *item, r rm.Runner, up bool) {
	a := it.a
	switch {
	case r.Busy && (a.State == rm.StateStarting || a.State == rm.StateIdle):
		a, _ = a.MoveTo(rm.StateBusy, p.now)
		if p.record(ctx, it, a) {
			it.log.Info("runner is busy")
		}
	case up && !r.Busy && a.State == rm.StateStarting:
		a, _ = a.MoveTo(rm.StateIdle, p.now)
		if p.record(ctx, it, a) {
			it.log.Info("runner is online")
		}
	}
}

// confirmDue reports whether a runner marked missing is due for the
// lookup that makes it a zombie: its grace is over and no lookup has
// answered since.
func (p *pass) confirmDue(it *item) bool {
	rt, _ := p.l.tab.get(it.a.ID)
	if rt.missingSince.IsZero() {
		return false
	}
	due := rt.missingSince.Add(p.l.cfg.ZombieGrace)
	lk := p.l.reg.looked[it.a.ID]
	return !p.now.Before(due) && lk.at.Before(due)
}

// lookupDue reports whether the pass looks up the attempt's registration
// in a target that cannot list: a runner found gone at a restart (once
// after its loss, so its conclusion knows whether GitHub has a trace), a
// missing runner at the end of its grace, and every live runner not
// running a job, once it has had its boot to start (firstLookup) and then
// at most every RunnerListEvery.
func (p *pass) lookupDue(it *item) bool {
	l := p.l
	if it.concluded {
		return false
	}
	lk, looked := l.reg.looked[it.a.ID]
	if it.exited {
		rt, _ := l.tab.get(it.a.ID)
		return rt.goneAtAdopt && lk.at.Before(rt.exitSeenAt)
	}
	if !it.holdsSlot() || it.proc == nil || p.running(it) {
		return false
	}
	if p.confirmDue(it) {
		return true
	}
	if first := p.firstLookup(it); p.now.Before(first) {
		p.deadline(first)
		return false
	}
	if looked && p.now.Before(lk.at.Add(l.cfg.RunnerListEvery)) {
		return false
	}
	return true
}

// firstLookup is when a launched runner's registration is first looked
// up: once its policy's boot (measured, else DefaultBootEstimate) is over,
// when it should be listening, so that a spare reads idle about when GitHub
// shows it online rather than a whole RunnerListEvery after its launch;
// never later than RunnerListEvery.
func (p *pass) firstLookup(it *item) time.Time {
	wait := p.l.cfg.RunnerListEvery
	if it.a.State == rm.StateStarting {
		wait = min(wait, p.l.spares.bootOr(it.pol.ID))
	}
	return it.a.StartedAt.Add(wait)
}

// lookUpRunners observes a target that cannot list its runners: each due
// attempt's registration is looked up (lookupDue). Online and busy come
// from job events and the journal; a lookup says only that the
// registration exists. When every due lookup answered, the loop's view
// counts as listed at the pass's time, for conclusions that wait for
// GitHub's word after a loss.
func (p *pass) lookUpRunners(ctx context.Context) {
	l := p.l
	if p.quiet {
		return
	}
	at := l.cfg.Now()
	for _, it := range p.items {
		if !p.lookupDue(it) {
			continue
		}
		if p.isQuiet() || !p.lookUp(ctx, it, true) {
			return
		}
	}
	l.listAt, l.listed = at, true
}

// confirmMissing looks up, in a target that lists, the live runners this
// pass's list lacked and the missing ones due for their second word.
func (p *pass) confirmMissing(ctx context.Context, lacked []*item) {
	if p.quiet {
		return
	}
	asked := make(map[rm.AttemptID]bool, len(lacked))
	for _, it := range lacked {
		asked[it.a.ID] = true
	}
	for _, it := range p.items {
		if !asked[it.a.ID] && it.holdsSlot() && it.proc != nil && !p.running(it) && p.confirmDue(it) {
			lacked = append(lacked, it)
		}
	}
	for _, it := range lacked {
		if p.isQuiet() || !p.lookUp(ctx, it, false) {
			return
		}
	}
}

// zombie reports whether the attempt's runner is a zombie: not running a
// job, and its registration said gone by two lookups at least ZombieGrace
// apart.
func (p *pass) zombie(it *item, rt runtime) bool {
	if rt.missingSince.IsZero() || p.running(it) {
		return false
	}
	lk, ok := p.l.reg.looked[it.a.ID]
	return ok && !lk.found && lk.at.Sub(rt.missingSince) >= p.l.cfg.ZombieGrace
}

// leftoverRegistration finds the registration a crash may have left for a
// registering attempt whose runner id the journal lacks (the JIT request
// answered, the write did not happen): looked up by name, which carries
// this host's prefix and the attempt's id, so a registration found is
// ours. ok is false when GitHub could not tell.
func (p *pass) leftoverRegistration(ctx context.Context, it *item) (id int64, ok bool) {
	l := p.l
	r, found, err := l.cfg.Target.Registrar.LookupRunner(ctx, 0, it.a.RunnerName)
	if err != nil {
		p.githubErr(err, "look up runner "+it.a.RunnerName)
		return 0, false
	}
	p.githubOK()
	if !found || r.Name != it.a.RunnerName {
		return 0, true
	}
	return r.ID, true
}

// githubUnavailable reports whether a failed registration is GitHub's
// failure rather than anything of the runner's or the target's: every
// error but "not found" (the target is wrong: the user must fix it) and
// the manager's own cancellation. GitHub's 5xx answers, the network,
// timeouts, rate limits and refused credentials say nothing of the next
// launch: the loop backs off, and such attempts do not count against
// MaxFailedLaunchesPerMinute.
func githubUnavailable(err error) bool {
	return err != nil && !errors.Is(err, rm.ErrNotFound) && !errors.Is(err, context.Canceled)
}
