package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// maxQueuedEvents bounds the job events kept between two passes.
const maxQueuedEvents = 10_000

// maxDoneJobs bounds the completions a loop remembers for the job ends
// noted after them (the word and the end are a pass apart at most).
const maxDoneJobs = 256

// minRequeue is the shortest RequeueAfter a pass asks for.
const minRequeue = 10 * time.Millisecond

// Loop is the autoscaler of one scale target on one host: a level-based
// reconcile pass (Reconcile) and its driver (Run). Events (a runner
// exited, GitHub's demand changed, a user edit) only nudge it; every pass
// decides from the world as it is: the journal, GitHub's runner list, the
// runner processes and the latest demand (docs/architecture.md).
type Loop struct {
	cfg   Config
	key   string
	log   *slog.Logger
	tab   *table
	nudge chan struct{}
	// drv runs the passes and owns their backoff and the hold of GitHub
	// calls, shared by Run, the stop and the drain.
	drv *driver
	// held are registrations GitHub refused to remove as busy after their
	// attempts ended, asked for again (removals.go).
	held heldRemovals
	// forks is GitHub's word on whether recent runs came from forks.
	forks forkRuns
	// awaiting are concluded attempts whose slots wait for GitHub's word
	// on their jobs' runs (releaseSlotOnWord).
	awaitMu  sync.Mutex
	awaiting map[rm.AttemptID]awaitingWord
	closed   chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	capacity atomic.Int64
	draining atomic.Bool
	// stopping: Run's context ended without Drain; draining is set too,
	// and the runners it removes are concluded "manager stopped".
	stopping atomic.Bool
	running  atomic.Bool

	mu          sync.Mutex // guards the fields below; never held across I/O
	policyIDs   []rm.PolicyID
	demand      rm.Demand
	demandKnown bool
	// spareShare is the spares a fleet's holder gave this host
	// (rm.Demand.Spares), when spareShared.
	spareShare  int
	spareShared bool
	// jobEnds are when attempts of this loop that ran a job ended (their
	// exit seen), and the job, kept while newer than the demand figure
	// and until a figure comes with word that the job completed: until
	// then the figure may still count their jobs (see demandNow).
	jobEnds []jobEnd
	// doneJobs are the jobs (and their runners) the last figures came
	// with word of completion, the newest maxDoneJobs: an end noted after
	// its word (the word came during the pass that concluded it) is not
	// counted.
	doneJobs []jobEnd
	events   []rm.JobEvent
	// pending and unmatched are the jobs the source last listed
	// (rm.Demand.Pending, Unmatched), for the jobs view.
	pending   []rm.PendingJob
	unmatched []rm.PendingJob
	// starts are the job starts of the last hour (jobstarts.go), endsSeen
	// the jobs whose end was told to OnJobEnded.
	starts   []jobStartSample
	endsSeen []string
	watchErr string
	status   loopStatus
	refusals map[rm.PolicyID]Refusal
	// pauses: which policies' launches are paused for failures (logged
	// when a pause starts and ends).
	pauses pauseLog
	// deprecated: the policies whose runner exited 7, held until a newer
	// one is there (deprecated.go).
	deprecated    deprecations
	deprecatedLog pauseLog

	passMu  sync.Mutex // one pass at a time; guards the fields below
	watched map[rm.AttemptID]bool
	runners []rm.Runner
	listAt  time.Time
	listed  bool
	// listedIdle: the last list was taken with nothing live.
	listedIdle bool
	reg        registry
	// foreign are live attempts of this host's policies that another host
	// launched (their runner names carry its prefix), logged once each:
	// the pass never touches them.
	foreign map[rm.AttemptID]bool
	// spares is the warm spares' bookkeeping (spares.go).
	spares spareState

	// lastEnd is the time of the last pass that concluded an attempt (its
	// EndedAt), guarded by passMu: the list taken when the loop falls idle
	// is sent after it.
	lastEnd time.Time
}

// loopStatus is the loop's part of the supervisor's Status.
type loopStatus struct {
	policies []status.Policy
	attempts []status.Attempt
	jobs     []status.Job
	live     int
	// passErr is the pass's first error, notes its word per policy: the
	// parts of a policy's last error that only a pass changes (snapshot).
	passErr string
	notes   map[rm.PolicyID]string
}

// NewLoop checks cfg and returns a loop for its policies, which must share
// one target.
func NewLoop(cfg Config) (*Loop, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("reconcile: a loop needs a Store")
	case !cfg.Target.valid():
		return nil, errors.New("reconcile: a loop needs a Target (a Registrar and a Demand source)")
	case cfg.Launcher == nil:
		return nil, errors.New("reconcile: a loop needs a Launcher")
	case cfg.Host.ID.IsZero():
		return nil, errors.New("reconcile: a loop needs its Host (with an ID)")
	case len(cfg.Policies) == 0:
		return nil, errors.New("reconcile: a loop needs at least one policy")
	}
	key := cfg.Policies[0].Target.Key()
	for _, p := range cfg.Policies {
		if p.Target.Key() != key {
			return nil, fmt.Errorf("reconcile: policies %s and %s have different targets (%s, %s); give each target its own loop",
				cfg.Policies[0].Name, p.Name, cfg.Policies[0].Target, p.Target)
		}
		if !p.IsOwnedBy(cfg.Host.ID) {
			return nil, fmt.Errorf("reconcile: policy %s is not owned by host %s", p.Name, cfg.Host.Name)
		}
	}
	cfg.setDefaults()
	if cfg.Admission == nil {
		cfg.Admission = &Admission{}
	}
	l := &Loop{
		cfg:      cfg,
		key:      key,
		log:      cfg.Logger.With("target", cfg.Policies[0].Target.Short()),
		tab:      cfg.tab,
		nudge:    make(chan struct{}, 1),
		closed:   make(chan struct{}),
		watched:  make(map[rm.AttemptID]bool),
		refusals: make(map[rm.PolicyID]Refusal),
	}
	for _, p := range cfg.Policies {
		l.policyIDs = append(l.policyIDs, p.ID)
	}
	l.drv = &driver{name: "reconcile pass", nudge: l.nudge, now: cfg.Now, base: cfg.BackoffBase, max: cfg.BackoffMax, log: l.log}
	return l, nil
}

// Key is the target key the loop serves.
func (l *Loop) Key() string { return l.key }

// Nudge asks for a pass now. Nudges coalesce: many before a pass cause one.
func (l *Loop) Nudge() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// SetPolicies replaces the set of policies the loop serves (same target).
func (l *Loop) SetPolicies(ids []rm.PolicyID) {
	l.mu.Lock()
	l.policyIDs = slices.Clone(ids)
	l.mu.Unlock()
	l.Nudge()
}

// ReportDemand takes a demand figure and its job events (the target's
// Watch calls it; a webhook receiver may too) and nudges the loop.
func (l *Loop) ReportDemand(d rm.Demand) {
	if d.At.IsZero() {
		d.At = l.cfg.Now()
	}
	l.mu.Lock()
	l.demand.Wanted, l.demand.Queued, l.demand.At = d.Wanted, d.Queued, d.At
	if d.SparesShared {
		l.spareShare, l.spareShared = d.Spares, true
	}
	l.demandKnown = true
	for _, e := range d.Events {
		// A figure that comes with a job's completion no longer counts it,
		// even if it is dated before the runner's exit (a classic figure
		// a webhook updated keeps its poll's time).
		if e.Kind == rm.JobCompleted && (e.JobID != "" || e.RunnerName != "") {
			done := jobEnd{job: e.JobID, runner: e.RunnerName}
			l.jobEnds = slices.DeleteFunc(l.jobEnds, done.same)
			l.doneJobs = append(l.doneJobs, done)
		}
	}
	if over := len(l.doneJobs) - maxDoneJobs; over > 0 {
		l.doneJobs = slices.Delete(l.doneJobs, 0, over)
	}
	l.watchErr = ""
	if d.PendingListed {
		l.pending, l.unmatched = slices.Clone(d.Pending), slices.Clone(d.Unmatched)
	}
	l.events = append(l.events, d.Events...)
	if over := len(l.events) - maxQueuedEvents; over > 0 {
		l.log.Warn("too many job events queued; dropping the oldest", "dropped", over)
		l.events = slices.Delete(l.events, 0, over)
	}
	l.mu.Unlock()
	l.Nudge()
}

// jobEnd is an attempt's end that the demand figure may still count: its
// job, when known (an attempt concluded from its own evidence of a job,
// the Worker it ran, may not have had GitHub's word yet), and its runner.
type jobEnd struct {
	at     time.Time
	job    string // rm.Job.ID; "": not known
	runner string
}

// same reports whether o is of the same job or the same runner as e.
func (e jobEnd) same(o jobEnd) bool {
	return e.job != "" && e.job == o.job || e.runner != "" && e.runner == o.runner
}

// jobEnded notes that an attempt whose runner (named runner) ran a job
// (job, its rm.Job.ID, "" if not known) ended at t (its exit).
func (l *Loop) jobEnded(t time.Time, job string, runner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := jobEnd{at: t, job: job, runner: runner}
	if l.demandKnown && !t.After(l.demand.At) || slices.ContainsFunc(l.doneJobs, end.same) {
		return
	}
	l.jobEnds = append(l.jobEnds, end)
	if over := len(l.jobEnds) - maxQueuedEvents; over > 0 {
		l.jobEnds = slices.Delete(l.jobEnds, 0, over)
	}
}

// demandNow is the demand figure less the jobs it may still count that
// are over: those of attempts that ended having run a job after the figure
// was taken. A figure lags (classic mode polls every 30 s): without this,
// each runner that finished its job would be replaced by one that idles
// until the next figure. A newer figure starts the count again, and one
// that comes with a job's completion takes that job's end off the count.
func (l *Loop) demandNow() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.demand.At
	l.jobEnds = slices.DeleteFunc(l.jobEnds, func(j jobEnd) bool { return !j.at.After(at) })
	return max(l.demand.Wanted-len(l.jobEnds), 0)
}

// sharedSpares is the spares a fleet's holder gave this host, if it did.
func (l *Loop) sharedSpares() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spareShare, l.spareShared
}

func (l *Loop) demandIsKnown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.demandKnown
}

// Capacity is the admitted capacity of the target as the last pass saw it:
// the live runners plus those admission would admit now, at most the
// policies' max. Scale-set mode sends it as maxCapacity.
func (l *Loop) Capacity() int { return int(l.capacity.Load()) }

// StopAttempt asks the loop to stop a live attempt's runner (removing its
// registration first, busy or not) and returns a channel closed once the
// attempt is concluded.
func (l *Loop) StopAttempt(id rm.AttemptID) <-chan struct{} {
	c := make(chan struct{})
	l.tab.with(id, func(r *runtime) {
		if r.stop == stopNone {
			r.stop = stopUser
		}
		r.stopped = append(r.stopped, c)
	})
	l.Nudge()
	return c
}

// Close stops the loop's watchers and waits for the stops it started.
// Run calls it; call it after using Reconcile directly.
func (l *Loop) Close() {
	l.once.Do(func() { close(l.closed) })
	l.wg.Wait()
}

// Run drives passes until ctx ends: at once on Nudge, after the pass's
// RequeueAfter otherwise, backing off while passes fail, waiting out rate
// limits. It watches the target's demand meanwhile. When ctx ends, it
// stops the idle runners (stopIdle) and leaves busy ones to their jobs
// (the next start re-adopts them), or with the Drain option waits for them
// too. Run returns nil when ctx ends, after the stop or the drain.
func (l *Loop) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("reconcile: loop is already running")
	}
	defer l.Close()
	// A slot still waiting for GitHub's word when the loop stops is emptied.
	defer l.expireWords(context.WithoutCancel(ctx), true)
	// The demand watch outlives ctx while draining: job events tell which
	// runners completed their jobs.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	var watchDone sync.WaitGroup
	defer func() {
		stopWatch()
		watchDone.Wait()
	}()

	first := true
	l.drv.run(ctx, func(ctx context.Context) (Result, error) {
		began := time.Now()
		res, err := l.reconcile(ctx)
		if l.cfg.OnPass != nil {
			l.cfg.OnPass(l.key, time.Since(began), err)
		}
		if first {
			// The first pass set the admitted capacity the watch reports.
			first = false
			watchDone.Add(1)
			go func() {
				defer watchDone.Done()
				l.watch(watchCtx)
			}()
		}
		return res, err
	}, nil)
	if !l.cfg.Drain {
		l.stopIdle(context.WithoutCancel(ctx))
		return nil
	}
	return l.drain(context.WithoutCancel(ctx))
}

// stopIdle is a stop without drain: launch nothing, remove every runner
// that holds no job (idle ones, and starting ones not yet online), each
// registration first, then its process, and conclude them; runners that
// run a job, or that GitHub refuses to remove because one was just
// assigned, keep running and are re-adopted at the next start. Left
// running, an idle runner would keep polling GitHub for a job nobody
// serves, and leak if the manager never returns. Bounded by StopTimeout:
// while GitHub cannot be reached, what is left is left registered.
func (l *Loop) stopIdle(ctx context.Context) {
	l.stopping.Store(true)
	l.draining.Store(true)
	ctx, cancel := context.WithTimeout(ctx, l.cfg.StopTimeout)
	defer cancel()
	// A stop does not wait out an outage: after stopGiveUpFailures GitHub
	// failures in a row, what could not be removed is left for the next
	// start (or doctor) to remove.
	l.drv.run(ctx, l.reconcile, func() bool {
		return l.onlyJobsLeft() || l.drv.githubFailures() >= stopGiveUpFailures
	})
	busy, other := 0, 0
	for _, a := range l.snapshot().attempts {
		if l.holdsJob(a) {
			busy++
		} else {
			other++
		}
	}
	if other > 0 {
		l.log.Warn("stopped with runners not removed; the next start looks at them", "busy", busy, "not_removed", other, "err", ctx.Err())
		return
	}
	l.log.Info("stopped: idle runners removed; busy ones keep their jobs until the next start", "busy", busy)
}

// stopGiveUpFailures is how many passes in a row GitHub failed in that
// end a stop without drain early.
const stopGiveUpFailures = 3

// onlyJobsLeft: every live attempt of the last pass runs a job.
func (l *Loop) onlyJobsLeft() bool {
	for _, a := range l.snapshot().attempts {
		if !l.holdsJob(a) {
			return false
		}
	}
	return true
}

// holdsJob: the attempt runs a job (as the journal or GitHub's refusal to
// remove its registration says) and its process is still there.
func (l *Loop) holdsJob(a status.Attempt) bool {
	rt, _ := l.tab.get(a.ID)
	if rt.proc != nil {
		select {
		case <-rt.proc.Done():
			return false // exited: to be concluded
		default:
		}
	}
	return a.State == rm.StateBusy || rt.refusedBusy
}

// drainReason is why a draining pass stops a runner.
func (l *Loop) drainReason() stopReason {
	if l.stopping.Load() {
		return stopShutdown
	}
	return stopDrain
}

// drain stops launching, removes idle runners and waits until every live
// attempt of the loop is concluded (busy ones finish their jobs) or ctx
// ends. Run calls it when its context ends if the Drain option is set.
func (l *Loop) drain(ctx context.Context) error {
	l.draining.Store(true)
	if l.cfg.DrainTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.cfg.DrainTimeout)
		defer cancel()
	}
	l.log.Info("draining: removing idle runners, waiting for busy ones")
	l.drv.run(ctx, l.reconcile, func() bool { return len(l.snapshot().attempts) == 0 })
	if n := len(l.snapshot().attempts); n > 0 {
		return fmt.Errorf("drain of %s ended with %d runners live: %w", l.key, n, ctx.Err())
	}
	l.log.Info("drained")
	return nil
}

// SetDraining makes passes launch nothing and scale idle runners down.
func (l *Loop) SetDraining(on bool) {
	l.draining.Store(on)
	l.Nudge()
}

// Live is the number of attempts holding a slot after the last pass.
func (l *Loop) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status.live
}

// WatchRetryMax caps the wait before a demand watch that returned (what it
// cannot repair itself: credentials refused, the repository not found,
// another owner's session) is started again: revoked credentials restored
// are served within it (the goal is 30 s), at a cost of at most 180 REST
// calls an hour while the failure lasts.
const WatchRetryMax = 20 * time.Second

// watch runs the target's demand watch until ctx ends, restarting it after
// failures under a driver of its own: at a rate limit's reset, or with a
// backoff (capped at WatchRetryMax: Watch returns only what it cannot
// repair itself) that starts again from BackoffBase once the watch has
// reported.
// The first report after a failure also ends the passes' hold of GitHub
// calls: GitHub answers again.
func (l *Loop) watch(ctx context.Context) {
	var failing atomic.Bool
	d := &driver{name: "demand watch", now: l.cfg.Now, base: l.cfg.BackoffBase, max: l.cfg.BackoffMax,
		ghMax: min(l.cfg.BackoffMax, WatchRetryMax), log: l.log}
	d.run(ctx, func(ctx context.Context) (Result, error) {
		var reported atomic.Bool
		report := func(dm rm.Demand) {
			reported.Store(true)
			if failing.CompareAndSwap(true, false) {
				l.drv.recovered(l.cfg.Now())
			}
			l.ReportDemand(dm)
		}
		err := l.cfg.Target.Demand.Watch(ctx, l.Capacity, report)
		if err == nil || ctx.Err() != nil {
			return Result{RequeueAfter: l.cfg.BackoffBase, GitHubAnswered: true}, nil
		}
		var rl *rm.RateLimitError
		if !errors.As(err, &rl) {
			failing.Store(true)
			if errors.Is(err, rm.ErrUnauthorized) || errors.Is(err, rm.ErrNotFound) || errors.Is(err, rm.ErrSessionConflict) {
				// A stale figure would keep runners for jobs nobody can
				// see: keep min idle only until the watch is back.
				l.mu.Lock()
				l.demand.Wanted, l.demandKnown = 0, false
				l.mu.Unlock()
			}
		}
		l.noteWatchError(err)
		return Result{GitHubAnswered: reported.Load()}, &githubError{err}
	}, nil)
}

func (l *Loop) noteWatchError(err error) {
	l.mu.Lock()
	l.watchErr = "demand: " + err.Error()
	l.mu.Unlock()
}

// watchProcess nudges the loop the moment p exits: what frees a slot
// within milliseconds.
func (l *Loop) watchProcess(id rm.AttemptID, p rm.Process) {
	if l.watched[id] {
		return
	}
	l.watched[id] = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case <-p.Done():
			l.Nudge()
		case <-l.closed:
		}
	}()
}

// stopProcess stops an attempt's runner in the background; its exit
// nudges the loop, whose next pass concludes it.
func (l *Loop) stopProcess(log *slog.Logger, id rm.AttemptID, p rm.Process, why stopReason) {
	started := false
	l.tab.with(id, func(r *runtime) {
		if r.stop == stopNone {
			r.stop = why
		}
		if !r.stopping {
			r.stopping, started = true, true
		}
	})
	if !started || p == nil {
		return
	}
	log.Info("stopping runner", "why", string(why))
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.StopGrace+10*time.Second)
		defer cancel()
		if err := p.Stop(ctx, l.cfg.StopGrace); err != nil {
			log.Warn("stopping the runner failed", "err", err)
		}
		l.Nudge()
	}()
}
