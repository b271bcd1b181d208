package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// pass is one reconcile step's working state. It lives for one call of
// Reconcile and is owned by it, except for mu-guarded fields the pass's
// concurrent launches touch.
type pass struct {
	l   *Loop
	now time.Time

	policies []rm.Policy // served, in name order
	byPolicy map[rm.PolicyID]*rm.Policy
	items    []*item
	byName   map[string]*item

	// quiet: no GitHub call in this pass, because the driver held calls
	// back at its start (until quietUntil) or because one failed in it.
	quietUntil time.Time
	quiet      bool
	// ghOK: a GitHub call of the pass succeeded.
	ghOK  bool
	fresh bool // the runner list was taken in this pass
	// demandAt is when the demand figure this pass applied the events of
	// was taken.
	demandAt time.Time

	next time.Time // earliest deadline seen

	mu       sync.Mutex
	errs     []error // the journal's: the driver backs off
	ghErrs   []error // GitHub's: the driver holds GitHub calls back
	notes    map[rm.PolicyID]string
	cleanups []func(context.Context)
	admitted map[rm.PolicyID]int
	// capRefused is the refusal that cut each policy's admitted capacity.
	capRefused map[rm.PolicyID]Refusal

	// spares is the pass's plan for its warm spares (spares.go);
	// spareTodo the spares admitted, lastBatch: the admission session
	// under way is the pass's last.
	spares    *sparePlan
	spareTodo []*item
	lastBatch bool
}

// item is one live attempt as the pass sees it.
type item struct {
	a    rm.Attempt
	pol  *rm.Policy
	log  *slog.Logger
	proc rm.Process
	// exited: its process is gone (or was found gone after a restart).
	exited bool
	// unresolved: its process could not be looked for; it keeps its slot.
	unresolved bool
	concluded  bool
}

// holdsSlot: the attempt counts against max and memory.
func (it *item) holdsSlot() bool { return !it.concluded && !it.exited }

// Reconcile runs one pass: observe (the journal's live attempts, their
// processes, GitHub's runners with this host's prefix, the latest demand
// and job events), conclude (attempts whose process is gone), reap (both
// ways: leftover registrations, timed-out, zombie and stopped runners),
// scale (up through admission, down by removing idle registrations), and
// schedule. One bad item is logged and skipped; an error is returned when
// the pass could not observe or GitHub failed, after doing all it could.
// It never sleeps. Its RequeueAfter is the driver's verdict: when the next
// pass should run, backoff included; a pass run before then while GitHub
// calls are held back makes none.
func (l *Loop) Reconcile(ctx context.Context) (Result, error) {
	res, err := l.reconcile(ctx)
	res.RequeueAfter = l.drv.settle(res, err)
	return res, err
}

// reconcile is one pass, as the driver runs it: its Result says when its
// own work is due next, and its error is classed for the driver.
func (l *Loop) reconcile(ctx context.Context) (Result, error) {
	l.passMu.Lock()
	defer l.passMu.Unlock()
	p := &pass{l: l, now: l.cfg.Now(), byName: make(map[string]*item), byPolicy: make(map[rm.PolicyID]*rm.Policy),
		notes: make(map[rm.PolicyID]string)}
	return p.run(ctx)
}

func (p *pass) run(ctx context.Context) (Result, error) {
	l := p.l
	if err := p.observeJournal(ctx); err != nil {
		return Result{RequeueAfter: l.cfg.ActiveRequeue}, err
	}
	if until, held := l.drv.held(p.now); held {
		p.quietUntil, p.quiet = until, true
	}
	p.applyEvents(ctx)
	p.resolveProcesses()
	p.listRunners(ctx)
	p.observeRunners(ctx)
	p.concludeExited(ctx)
	p.repairUnfinishedLaunches(ctx)
	p.reapRunners(ctx)
	p.reapRegistrations(ctx)
	p.retryRemovals(ctx)
	live, wanted := p.scale(ctx)
	p.noteEnds()
	p.publish(live)
	return p.schedule(live, wanted), p.err()
}

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

// record writes an attempt update; on success the item holds it.
func (p *pass) record(ctx context.Context, it *item, a rm.Attempt) bool {
	a.UpdatedAt = p.l.cfg.Now()
	if err := p.l.cfg.Store.RecordAttempt(ctx, a); err != nil {
		it.log.Log(ctx, errLevel(err), "journal write failed", "state", string(a.State), "err", err)
		p.addErr(fmt.Errorf("record attempt %s: %w", a.ID, err))
		return false
	}
	it.a = a
	return true
}

func (p *pass) addErr(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

// githubErr notes a failed GitHub call: the pass stops calling, and its
// error tells the driver, which holds calls back (until a rate limit's
// reset, or for a backoff).
func (p *pass) githubErr(err error, what string) {
	if err == nil || errors.Is(err, rm.ErrRunnerBusy) || errors.Is(err, context.Canceled) {
		return
	}
	p.mu.Lock()
	p.ghErrs = append(p.ghErrs, fmt.Errorf("%s: %w", what, err))
	p.quiet = true
	p.mu.Unlock()
}

// githubOK notes a GitHub call that succeeded: the backoff of GitHub's
// failures starts over.
func (p *pass) githubOK() {
	p.mu.Lock()
	p.ghOK = true
	p.mu.Unlock()
}

func (p *pass) isQuiet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quiet
}

func (p *pass) deadline(t time.Time) {
	if !t.IsZero() && (p.next.IsZero() || t.Before(p.next)) {
		p.next = t
	}
}

func (p *pass) note(pol rm.PolicyID, msg string) {
	p.mu.Lock()
	if _, ok := p.notes[pol]; !ok {
		p.notes[pol] = msg
	}
	p.mu.Unlock()
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

// noteEnds notes the pass's time when it concluded an attempt.
func (p *pass) noteEnds() {
	for _, it := range p.items {
		if it.concluded {
			p.l.lastEnd = p.now
			return
		}
	}
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

// reapRunners stops runners the manager must stop: asked by a user, not
// online past StartTimeout, idle past IdleTimeout, hung after their job
// (alive HungGrace after GitHub said the job completed), or zombies
// (alive, not running a job, and their registration said gone by two
// lookups at least ZombieGrace apart).
func (p *pass) reapRunners(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if !it.holdsSlot() || it.proc == nil {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.stopping {
			continue
		}
		a := it.a
		switch {
		case rt.stop == stopUser:
			p.deregister(ctx, it, true)
			p.stop(ctx, it, stopUser)
		case a.State == rm.StateStarting && !p.now.Before(a.StartedAt.Add(l.cfg.StartTimeout)):
			if p.deregister(ctx, it, false) {
				p.stop(ctx, it, stopStartTimeout)
			}
		case a.State == rm.StateIdle && l.cfg.IdleTimeout > 0 && !p.now.Before(a.IdleAt.Add(l.cfg.IdleTimeout)):
			if p.deregister(ctx, it, false) {
				p.stop(ctx, it, stopIdleTimeout)
			}
		case p.hung(rt):
			p.stopHung(ctx, it, rt)
		case p.zombie(it, rt):
			it.log.Warn("runner is a zombie: alive, no job, and GitHub has had no registration for it since",
				"missing_since", rt.missingSince.Format(time.RFC3339))
			p.stop(ctx, it, stopZombie)
		default:
			if a.State == rm.StateStarting {
				p.deadline(a.StartedAt.Add(l.cfg.StartTimeout))
			}
			if a.State == rm.StateIdle && l.cfg.IdleTimeout > 0 {
				p.deadline(a.IdleAt.Add(l.cfg.IdleTimeout))
			}
			if !rt.missingSince.IsZero() && !p.running(it) {
				p.deadline(rt.missingSince.Add(l.cfg.ZombieGrace))
			}
			if rt.jobCompleted && !rt.jobCompletedAt.IsZero() {
				p.deadline(rt.jobCompletedAt.Add(l.cfg.HungGrace))
			}
		}
	}
}

// stop stops an attempt's runner in the background, noting why on it.
func (p *pass) stop(ctx context.Context, it *item, why stopReason) {
	p.noteAttempt(ctx, it, "stopping: "+string(why))
	p.l.stopProcess(it.log, it.a.ID, it.proc, why)
}

// noteAttempt records what the manager is doing with an attempt, for the
// status and the TUI, when it changed.
func (p *pass) noteAttempt(ctx context.Context, it *item, msg string) {
	if it.a.LastMessage == msg {
		return
	}
	a := it.a
	a.LastMessage = msg
	p.record(ctx, it, a)
}

// deregister removes an attempt's registration before its runner is
// stopped. It reports whether the runner may be stopped: not when GitHub
// says it is busy (unless force), nor while GitHub calls are held back.
func (p *pass) deregister(ctx context.Context, it *item, force bool) bool {
	l := p.l
	if it.a.GitHubRunnerID == 0 {
		return true
	}
	if p.isQuiet() {
		return force
	}
	err := l.cfg.Target.Registrar.RemoveRunner(ctx, it.a.GitHubRunnerID)
	switch {
	case err == nil:
		p.githubOK()
		l.tab.with(it.a.ID, func(r *runtime) { r.deregistered = true })
		return true
	case errors.Is(err, rm.ErrRunnerBusy):
		l.tab.with(it.a.ID, func(r *runtime) { r.refusedBusy = true })
		it.log.Info("GitHub says the runner is busy; left running")
		p.noteAttempt(ctx, it, "GitHub says it is busy: left running")
		return force
	default:
		p.githubErr(err, "remove runner")
		return force
	}
}

// reapRegistrations removes this host's registrations at the target that
// no live attempt owns (a crash between registration and the journal, a
// removal that failed), unless busy. Only on a list taken in this pass.
func (p *pass) reapRegistrations(ctx context.Context) {
	l := p.l
	if !p.fresh {
		return
	}
	prefix := rm.RunnerNamePrefix(l.cfg.Host.ID)
	for _, r := range l.runners {
		if p.isQuiet() {
			return
		}
		if _, ours := p.byName[r.Name]; ours || !strings.HasPrefix(r.Name, prefix) {
			continue
		}
		if id, err := rm.ParseAttemptID(strings.TrimPrefix(r.Name, prefix)); err == nil && p.liveElsewhere(ctx, id) {
			continue
		}
		if r.Busy {
			l.log.Debug("leftover registration is busy; left alone", "runner", r.Name)
			continue
		}
		err := l.cfg.Target.Registrar.RemoveRunner(ctx, r.ID)
		switch {
		case err == nil:
			p.githubOK()
			l.log.Info("removed a registration no live attempt owns", "runner", r.Name, "runner_id", r.ID)
		case errors.Is(err, rm.ErrRunnerBusy):
			l.log.Debug("leftover registration is busy; left alone", "runner", r.Name)
		default:
			l.log.Warn("could not remove a leftover registration", "runner", r.Name, "err", err)
			p.githubErr(err, "remove leftover runner")
		}
	}
}

// liveElsewhere reports whether a listed registration's attempt is live
// outside this pass's items: launched by another loop of this host (the
// runner list of a scope holds every target's registrations of the host,
// each scale set's or label set's), or in flight. The journal answers for
// attempts this process does not know yet (another loop's first pass after
// a restart); when it cannot be read, the registration is left alone. So
// is the registration of an attempt that ended after the list was sent (a
// list another loop had sent, rm.SharedRunnerLister): the list is older than
// its conclusion, which dealt with its registration (removed it, asks
// again while GitHub holds it busy, or left it to GitHub, which deletes an
// ephemeral runner's after its job); a list sent after the end tells
// whether one is left.
func (p *pass) liveElsewhere(ctx context.Context, id rm.AttemptID) bool {
	if _, known := p.l.tab.get(id); known {
		return true
	}
	a, err := p.l.cfg.Store.Attempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || a.Live() || a.EndedAt.After(p.l.listAt)
}

// afterScale defers GitHub and disk cleanup of concluded attempts until
// the launches of the pass are done, so a freed slot is refilled first.
func (p *pass) afterScale(f func(context.Context)) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}
