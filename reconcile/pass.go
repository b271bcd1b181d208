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
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
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

	quietUntil time.Time
	quiet      bool
	fresh      bool // the runner list was taken in this pass
	// demandAt is when the demand figure this pass applied the events of
	// was taken.
	demandAt time.Time

	next time.Time // earliest deadline seen

	mu       sync.Mutex
	errs     []error // the journal's: the driver backs off
	ghErrs   []error // GitHub's: the loop holds calls back itself
	notes    map[rm.PolicyID]string
	cleanups []func(context.Context)
	admitted map[rm.PolicyID]int

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
	proc platform.Process
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
// schedule (Result.RequeueAfter). One bad item is logged and skipped; an
// error is returned when the pass could not observe or GitHub failed, after
// doing all it could. It never sleeps.
func (l *Loop) Reconcile(ctx context.Context) (Result, error) {
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
	p.quietUntil, p.quiet = l.quiet(p.now)
	p.applyEvents(ctx)
	p.resolveProcesses()
	p.listRunners(ctx)
	p.observeRunners(ctx)
	p.concludeExited(ctx)
	p.repairUnfinishedLaunches(ctx)
	p.reapRunners(ctx)
	p.reapRegistrations(ctx)
	live, wanted := p.scale(ctx)
	p.publish(live)
	return p.schedule(live, wanted), p.err()
}

// observeJournal reads the served policies and their live attempts.
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
		pol := &p.policies[i]
		p.byPolicy[pol.ID] = pol
		atts, err := l.cfg.Store.ActiveAttempts(ctx, pol.ID)
		if err != nil {
			return fmt.Errorf("read live attempts of policy %s: %w", pol.Name, err)
		}
		for _, a := range atts {
			it := &item{a: a, pol: pol, log: l.log.With("policy", pol.Name, "attempt", a.ID.String(), "runner", a.RunnerName)}
			p.items = append(p.items, it)
			p.byName[a.RunnerName] = it
		}
	}
	return nil
}

// record writes an attempt update; on success the item holds it.
func (p *pass) record(ctx context.Context, it *item, a rm.Attempt) bool {
	a.UpdatedAt = p.l.cfg.Now()
	if err := p.l.cfg.Store.RecordAttempt(ctx, a); err != nil {
		it.log.Error("journal write failed", "state", string(a.State), "err", err)
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

// githubErr notes a failed GitHub call: the loop holds calls back (until a
// rate limit's reset, or for a backoff) and the pass stops calling.
func (p *pass) githubErr(err error, what string) {
	if err == nil || errors.Is(err, github.ErrRunnerBusy) || errors.Is(err, context.Canceled) {
		return
	}
	p.l.githubFailed(err, p.now)
	until, quiet := p.l.quiet(p.now)
	p.mu.Lock()
	p.ghErrs = append(p.ghErrs, fmt.Errorf("%s: %w", what, err))
	p.quietUntil, p.quiet = until, quiet
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

// applyEvents applies the job events GitHub sent since the last pass: the
// runner they name took a job (busy, with the job's identity).
func (p *pass) applyEvents(ctx context.Context) {
	l := p.l
	l.mu.Lock()
	events := l.events
	l.events = nil
	if l.demandKnown {
		p.demandAt = l.demand.At
	}
	l.mu.Unlock()
	var keep []github.JobEvent
	for _, ev := range events {
		if (ev.Kind != github.JobStarted && ev.Kind != github.JobCompleted) || ev.RunnerName == "" {
			continue
		}
		it := p.byName[ev.RunnerName]
		if it == nil {
			p.nameJob(ctx, ev) // not this host's, or concluded already
			continue
		}
		if it.a.State == rm.StatePending || it.a.State == rm.StateRegistering {
			keep = append(keep, ev) // its launch is being recorded: next pass
			continue
		}
		if ev.Kind == github.JobCompleted {
			l.tab.with(it.a.ID, func(r *runtime) { r.jobCompleted = true })
		}
		a := it.a
		changed := false
		if a.State == rm.StateStarting || a.State == rm.StateIdle {
			a, _ = a.MoveTo(rm.StateBusy, p.now)
			changed = true
		}
		if a.Job.ID == 0 && ev.JobID != 0 {
			a.Job = rm.Job{ID: ev.JobID, RunID: ev.RunID, Workflow: ev.Workflow, Name: ev.DisplayName}
			changed = true
		}
		if changed && p.record(ctx, it, a) {
			it.log.Info("runner took a job", "job", a.Job.ID, "job_name", a.Job.Name, "event", string(ev.Kind))
		}
	}
	if len(keep) > 0 {
		l.mu.Lock()
		l.events = append(keep, l.events...)
		l.mu.Unlock()
	}
}

// nameJob takes GitHub's word on the job of an attempt this loop already
// concluded, when a later event names its runner: it names the job of one
// concluded from the runner's own trace, and corrects one concluded idle,
// lost or failed before GitHub's word came (lateOutcome), so no attempt
// any source says ran a job is left recorded otherwise.
func (p *pass) nameJob(ctx context.Context, ev github.JobEvent) {
	l := p.l
	prefix := rm.RunnerNamePrefix(l.cfg.Host.ID)
	if !strings.HasPrefix(ev.RunnerName, prefix) {
		return
	}
	id, err := rm.ParseAttemptID(strings.TrimPrefix(ev.RunnerName, prefix))
	if err != nil {
		return
	}
	a, err := l.cfg.Store.Attempt(ctx, id)
	if err != nil || a.Live() || p.byPolicy[a.Policy] == nil {
		return
	}
	was := a.Outcome
	o, correct := lateOutcome(a, ev)
	name := a.Job.ID == 0 && ev.JobID != 0 && (correct || a.Outcome.Kind == rm.CompletedJob)
	if !correct && !name {
		return
	}
	if name {
		a.Job = rm.Job{ID: ev.JobID, RunID: ev.RunID, Workflow: ev.Workflow, Name: ev.DisplayName}
	}
	if correct {
		if a.BusyAt.IsZero() {
			a.BusyAt = a.EndedAt
		}
		a.State, a.Outcome = rm.StateFinished, o
	}
	a.UpdatedAt = l.cfg.Now()
	write := l.cfg.Store.RecordAttempt
	if correct && was.Kind == rm.Failed {
		write = l.cfg.Store.ForceAttempt // failed → finished: the table forbids it, the evidence says so
	}
	if err := write(ctx, a); err != nil {
		l.log.Warn("could not record GitHub's word on the job of an ended attempt", "attempt", id.String(), "job", ev.JobID, "err", err)
		return
	}
	if correct {
		l.log.Info("ended attempt ran a job after all", "attempt", id.String(), "runner", ev.RunnerName, "job", ev.JobID,
			"was", was.String(), "outcome", o.String())
		return
	}
	l.log.Info("job named after its runner ended", "attempt", id.String(), "runner", ev.RunnerName, "job", ev.JobID, "job_name", ev.DisplayName)
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
			proc, err := l.cfg.Launcher.Adopt(it.a.ID, it.a.PID, it.a.ProcessStart)
			switch {
			case err == nil:
				l.tab.with(it.a.ID, func(r *runtime) { r.proc = proc })
				it.proc = proc
				it.log.Info("re-adopted runner process", "pid", it.a.PID)
			case errors.Is(err, platform.ErrProcessGone):
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
// makes none.
func (p *pass) listRunners(ctx context.Context) {
	l := p.l
	if p.quiet || l.reg.cannotList {
		return
	}
	age := p.now.Sub(l.listAt)
	live, scaleDown, needTrace := 0, false, false
	mayScaleDown := l.demandIsKnown() || l.draining.Load()
	for _, it := range p.items {
		if it.holdsSlot() {
			live++
		}
		if it.exited {
			if rt, _ := l.tab.get(it.a.ID); rt.goneAtAdopt && l.listAt.Before(rt.exitSeenAt) {
				needTrace = true
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
	need := !l.listed || needTrace || scaleDown ||
		(live > 0 && age >= l.cfg.RunnerListEvery) ||
		(live == 0 && !l.listedIdle) ||
		(l.cfg.OrphanListEvery > 0 && age >= l.cfg.OrphanListEvery)
	if !need {
		return
	}
	at := l.cfg.Now()
	rs, err := l.cfg.Target.Runners(ctx, rm.RunnerNamePrefix(l.cfg.Host.ID))
	if errors.Is(err, github.ErrCannotList) {
		// Scale-set runners: observeRunners looks each one up instead.
		l.log.Debug("the target cannot list its runners; looking each one up", "err", err)
		l.reg.cannotList = true
		return
	}
	if err != nil {
		p.githubErr(err, "list runners")
		return
	}
	l.githubOK()
	l.runners, l.listAt, l.listed, p.fresh = rs, at, true, true
	l.listedIdle = live == 0
}

// findRunner returns GitHub's newest word on an attempt's registration:
// its lookup, when newer than the list (or the target cannot list), else
// the list's entry.
func (p *pass) findRunner(a rm.Attempt) (github.Runner, bool) {
	l := p.l
	if lk, ok := l.reg.looked[a.ID]; ok && (l.reg.cannotList || !lk.at.Before(l.listAt)) {
		return lk.runner, lk.found
	}
	for _, r := range l.runners {
		if (a.GitHubRunnerID != 0 && r.ID == a.GitHubRunnerID) || r.Name == a.RunnerName {
			return r, true
		}
	}
	return github.Runner{}, false
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

// concludeExited concludes every attempt whose process is gone, from its
// exit code and what GitHub said (outcomeFor).
func (p *pass) concludeExited(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if !it.exited || it.concluded {
			continue
		}
		var rt runtime
		l.tab.with(it.a.ID, func(r *runtime) {
			if r.exitSeenAt.IsZero() {
				r.exitSeenAt = p.now
			}
			rt = *r
		})
		code := -1
		if it.proc != nil && !rt.goneAtAdopt {
			code = it.proc.ExitCode()
		}
		_, listed := p.findRunner(it.a)
		ranJob := p.ranJob(it)
		f := exitFacts{
			job:          it.a.State == rm.StateBusy || it.a.Job.ID != 0,
			ranJob:       ranJob,
			jobCompleted: rt.jobCompleted,
			exitCode:     code,
			goneAtAdopt:  rt.goneAtAdopt,
			listed:       listed && l.listed,
			stop:         rt.stop,
			deregistered: rt.deregistered,
			// GitHub's word is in once the demand source reported a figure
			// taken after the exit; JobWordGrace caps the wait for a silent
			// one. A drain concludes with what is known: it waits for jobs,
			// not for words about them.
			waited: p.wordAfter(rt.exitSeenAt) || p.now.Sub(rt.exitSeenAt) >= l.cfg.JobWordGrace || l.draining.Load(),
		}
		if f.goneAtAdopt && !f.job && f.waited && (!l.listed || l.listAt.Before(rt.exitSeenAt)) {
			// Lost or not depends on GitHub's list, taken after the loss.
			p.deadline(p.now.Add(l.cfg.ActiveRequeue))
			continue
		}
		o, wait := outcomeFor(f)
		if !wait && o.Kind == rm.CompletedJob && it.a.Job.ID == 0 && !f.waited && !ranJob {
			// Seen busy, but which job? GitHub's word names it shortly.
			wait = true
		}
		if !wait && ranJob && it.a.Job.ID == 0 {
			// The runner's own trace says it ran a job: conclude now, and
			// let GitHub's word name the job later (applyEvents).
			if o.Detail == "" {
				o.Detail = "ran a job (its Worker log says so); GitHub had not named the job yet"
			}
			if it.a.State == rm.StateStarting || it.a.State == rm.StateIdle {
				it.a, _ = it.a.MoveTo(rm.StateBusy, rt.exitSeenAt)
			}
		}
		if wait {
			p.noteAttempt(ctx, it, "exited; waiting for GitHub's word on its job")
			p.deadline(rt.exitSeenAt.Add(l.cfg.JobWordGrace))
			continue
		}
		remove := it.a.GitHubRunnerID != 0 && !rt.deregistered &&
			!(o.Kind == rm.CompletedJob && code == 0) && !(rt.goneAtAdopt && !listed)
		p.conclude(ctx, it, o, code, remove)
	}
}

// ranJob asks the launcher, when it can tell, whether the attempt's runner
// ran a job (its own trace: a Worker log). Only a launched attempt's root
// can hold one, and only until Cleanup.
func (p *pass) ranJob(it *item) bool {
	ev, ok := p.l.cfg.Launcher.(jobEvidence)
	return ok && it.a.PID != 0 && ev.RanJob(it.a.ID)
}

// conclude ends an attempt: exit code, usage, outcome in the journal; then
// its leftover registration and its root directory are removed.
func (p *pass) conclude(ctx context.Context, it *item, o rm.Outcome, code int, removeRegistration bool) {
	l := p.l
	a := it.a
	if code >= 0 {
		c := code
		a.ExitCode = &c
	}
	if l.cfg.Meters != nil {
		if u, ok := l.cfg.Meters.Take(a.ID); ok {
			a.Usage = u
		}
	}
	b, err := a.Conclude(o, p.now)
	if err != nil {
		it.log.Error("cannot conclude attempt", "outcome", o.String(), "err", err)
		return
	}
	b.UpdatedAt = p.now
	if err := l.cfg.Store.RecordAttempt(ctx, b); err != nil {
		if !errors.Is(err, store.ErrIllegalTransition) {
			it.log.Error("journal write failed", "outcome", o.String(), "err", err)
			p.addErr(fmt.Errorf("conclude attempt %s: %w", a.ID, err))
			return
		}
		// Recovery may force what the table forbids (a row left behind).
		if err := l.cfg.Store.ForceAttempt(ctx, b); err != nil {
			it.log.Error("journal write failed", "outcome", o.String(), "err", err)
			p.addErr(fmt.Errorf("conclude attempt %s: %w", a.ID, err))
			return
		}
	}
	it.a, it.concluded = b, true
	l.spares.concluded(b, o.Kind == rm.CompletedJob, p.now)
	if rt, _ := l.tab.get(a.ID); (o.Kind == rm.CompletedJob || !a.BusyAt.IsZero() || a.Job.ID != 0) && !rt.jobCompleted {
		// Its job may still count in the demand figure (see demandNow),
		// unless GitHub said it completed: that word came with a figure
		// that no longer counts it (a scale-set message's statistics, a
		// classic poll), usually before the runner's exit.
		ended := rt.exitSeenAt
		if ended.IsZero() {
			ended = p.now
		}
		l.jobEnded(ended)
	}
	l.tab.forget(a.ID)
	delete(l.watched, a.ID)
	args := []any{"outcome", o.String(), "life", p.now.Sub(a.CreatedAt).Round(time.Millisecond)}
	if a.ExitCode != nil {
		args = append(args, "exit_code", *a.ExitCode)
	}
	if a.Job.ID != 0 {
		args = append(args, "job", a.Job.ID)
	}
	if a.Usage.Samples > 0 {
		args = append(args, "peak_rss", formatBytes(a.Usage.PeakRSSBytes), "cpu_avg_millicores", a.Usage.CPUAvgMillicores)
	}
	switch {
	case code == 7:
		it.log.Error("runner version deprecated: install a newer runner (runner-manager runner install)", args...)
	case o.Kind == rm.Failed:
		it.log.Warn("attempt failed", args...)
	default:
		it.log.Info("attempt ended", args...)
	}
	// A root is kept for debugging only when the runner failed: not after
	// a stop during a job, which is the manager's or a user's doing.
	id, runnerID, failed := a.ID, a.GitHubRunnerID, o.Kind == rm.Failed && o.Reason != rm.Stopped
	launched := o.Reason != rm.RegistrationFailed // else no directory was made
	p.afterScale(func(ctx context.Context) {
		if removeRegistration && !p.isQuiet() {
			if err := l.cfg.Target.RemoveRunner(ctx, runnerID); err != nil && !errors.Is(err, github.ErrRunnerBusy) {
				it.log.Warn("could not remove the runner's registration; it will be reaped later", "err", err)
				p.githubErr(err, "remove runner")
			}
		}
		if launched {
			if err := l.cfg.Launcher.Cleanup(id, failed); err != nil {
				it.log.Warn("could not clean the attempt's directory", "err", err)
			}
		}
	})
}

// repairUnfinishedLaunches concludes pending and registering attempts no
// launch of this process is working on: the manager stopped in the middle
// of one (journal first means such a row is all a crash leaves).
func (p *pass) repairUnfinishedLaunches(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if it.concluded || (it.a.State != rm.StatePending && it.a.State != rm.StateRegistering) {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.inflight {
			continue
		}
		if rt.proc != nil {
			// Launched, but the journal write of its start failed: write it.
			a := it.a
			a.PID, a.ProcessStart = rt.proc.PID(), rt.proc.Start()
			if a.State == rm.StatePending {
				a, _ = a.MoveTo(rm.StateRegistering, p.now)
			}
			a, _ = a.MoveTo(rm.StateStarting, p.now)
			p.record(ctx, it, a)
			it.proc = rt.proc
			l.watchProcess(a.ID, rt.proc)
			continue
		}
		if it.a.GitHubRunnerID == 0 && it.a.State == rm.StateRegistering {
			// The JIT request may have answered before the crash: a
			// registration of this name is the attempt's.
			if p.isQuiet() {
				p.deadline(p.quietUntil)
				continue // GitHub is asked once it answers again
			}
			id, ok := p.leftoverRegistration(ctx, it)
			if !ok {
				continue
			}
			it.a.GitHubRunnerID = id
		}
		if it.a.GitHubRunnerID == 0 {
			p.conclude(ctx, it, rm.FailedWith(rm.RegistrationFailed, "the manager stopped before the runner was registered"), -1, false)
		} else {
			p.conclude(ctx, it, rm.FailedWith(rm.LaunchFailed, "the manager stopped between the runner's registration and its launch"), -1, true)
		}
	}
}

// reapRunners stops runners the manager must stop: asked by a user, not
// online past StartTimeout, idle past IdleTimeout, or zombies (alive, not
// running a job, and their registration said gone by two lookups at least
// ZombieGrace apart).
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
	err := l.cfg.Target.RemoveRunner(ctx, it.a.GitHubRunnerID)
	switch {
	case err == nil:
		l.githubOK()
		l.tab.with(it.a.ID, func(r *runtime) { r.deregistered = true })
		return true
	case errors.Is(err, github.ErrRunnerBusy):
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
		err := l.cfg.Target.RemoveRunner(ctx, r.ID)
		switch {
		case err == nil:
			l.githubOK()
			l.log.Info("removed a registration no live attempt owns", "runner", r.Name, "runner_id", r.ID)
		case errors.Is(err, github.ErrRunnerBusy):
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
// a restart); when it cannot be read, the registration is left alone.
func (p *pass) liveElsewhere(ctx context.Context, id rm.AttemptID) bool {
	if _, known := p.l.tab.get(id); known {
		return true
	}
	a, err := p.l.cfg.Store.Attempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || a.Live()
}

// afterScale defers GitHub and disk cleanup of concluded attempts until
// the launches of the pass are done, so a freed slot is refilled first.
func (p *pass) afterScale(f func(context.Context)) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}
