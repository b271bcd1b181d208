package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
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
	// warm is the workspace slot its launch leased (leaseSlot); nil cold.
	warm *rm.WarmSlot
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

// noteEnds notes the pass's time when it concluded an attempt.
func (p *pass) noteEnds() {
	for _, it := range p.items {
		if it.concluded {
			p.l.lastEnd = p.now
			return
		}
	}
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

// afterScale defers GitHub and disk cleanup of concluded attempts until
// the launches of the pass are done, so a freed slot is refilled first.
func (p *pass) afterScale(f func(context.Context)) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}
