package github

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Bounds of what a demand watcher keeps in memory.
const (
	// recentJobs is how many completed jobs are remembered (at most an
	// hour) for the evidence a target that starts watching late is told.
	recentJobs = 2000
	// recentFor is how long a completed job is remembered.
	recentFor = time.Hour
	// startupRuns is how many recently completed runs the first poll of a
	// repository reads the jobs of: evidence for runners that ended while
	// the manager was down.
	startupRuns = 25
	// maxTracked bounds the webhook-named jobs an organization or
	// enterprise watcher re-checks.
	maxTracked = 5000
	// minPollGap spaces two polls of one scope however often it is nudged
	// (a webhook flood, a replay).
	minPollGap = time.Second
)

// DefaultClassicPoll is how often a repository's demand is polled by
// default: short enough that a job's first runner starts within seconds
// of its queueing (the wait is up to a poll, then the JIT request and the
// launch), and free while nothing changes, every request being
// conditional (GitHub charges no quota for a 304). What changes is paid
// for once per change, whatever the interval: a job's run read while
// queued and once its runner holds it.
const DefaultClassicPoll = 2 * time.Second

// unchangedReportEvery is how often a target is told an unchanged figure
// with no event: a poll every 2 s would otherwise wake every classic loop
// of the repository every 2 s for nothing. The figure's time tells a loop
// that GitHub's word on a runner that exited is in; no later than this.
const unchangedReportEvery = 30 * time.Second

// DefaultClassicBusyPoll is the poll while more is queued than the last
// poll read (at most the poll itself).
const DefaultClassicBusyPoll = 2 * time.Second

// demandHub holds a Client's demand watchers, one per scope, shared by
// every classic target of that scope.
type demandHub struct {
	mu       sync.Mutex
	watchers map[string]*scopeWatcher
	subs     uint64 // subscriptions made, numbering them
}

// demandSub is one target's subscription to its scope's watcher.
type demandSub struct {
	labels   []string
	prefix   string
	idle     time.Duration
	busy     time.Duration
	capacity func() int
	report   func(rm.Demand)
	// seq numbers the subscription: of two alike, the earlier owns the
	// jobs they both match.
	seq uint64
	// fatal receives the error that ended the watcher (credentials or
	// scope refused).
	fatal chan error

	primed bool // has had its first report (with all the evidence known)
	// lastWanted and lastAt are of its last report: an unchanged figure
	// with no event is reported again only after unchangedReportEvery.
	lastWanted int
	lastAt     time.Time
}

// counts reports whether a job in state st is demand for sub: queued, or
// in progress on one of this host's runners (a job running elsewhere
// needs no runner of ours).
func (s *demandSub) counts(st *jobState) bool {
	if !MatchLabels(st.labels, s.labels) {
		return false
	}
	switch st.status {
	case "queued":
		return true
	case "in_progress":
		return s.prefix == "" || strings.HasPrefix(st.runnerName, s.prefix)
	}
	return false
}

// owner is the subscription a job is demand for, of the watcher's
// subscriptions whose labels match it: the closest fit (fewest labels),
// then the first by labels, then the earliest. GitHub gives a job to any
// idle runner whose labels hold the job's; counted for every policy it
// matches, one job launched a runner in each of them. w.mu is held.
func (w *scopeWatcher) owner(st *jobState) *demandSub {
	var best *demandSub
	for s := range w.subs {
		if !MatchLabels(st.labels, s.labels) {
			continue
		}
		if best == nil || closerFit(s, best) {
			best = s
		}
	}
	return best
}

// closerFit orders subscriptions for owner: fewer labels first, then by
// labels, then the earlier subscription, so that every poll picks the
// same one.
func closerFit(a, b *demandSub) bool {
	if len(a.labels) != len(b.labels) {
		return len(a.labels) < len(b.labels)
	}
	if c := slices.Compare(a.labels, b.labels); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// want is how many queued jobs sub should know of before a poll may
// leave the rest of a repository's queued runs unread: twice what it may
// run at once, and two more, so that it keeps launching until the next
// poll.
func (s *demandSub) want() int {
	c := 1
	if s.capacity != nil {
		c = max(s.capacity(), 1)
	}
	return 2*c + 2
}

// scopeWatcher polls one scope's demand for every classic target of it
// and fans each the jobs that match its labels. A repository is polled
// (its queued and in-progress runs, the jobs of runs that changed, all
// conditional requests); an organization or enterprise re-checks the jobs
// webhooks named against the API.
type scopeWatcher struct {
	c     *Client
	hub   *demandHub
	key   string
	scope rm.Scope
	log   *slog.Logger
	nudge chan struct{}

	mu       sync.Mutex
	refs     int
	subs     map[*demandSub]struct{}
	running  bool
	cancel   context.CancelFunc
	polled   bool
	polledAt time.Time            // of the last poll (full, or of the runs webhooks announced)
	at       time.Time            // of the last full poll: the figure's time
	jobs     map[int64]*jobState  // jobs queued or in progress, or not yet seen done
	recent   []*jobState          // completed jobs, oldest first, bounded
	tracked  map[int64]trackedJob // organization scope: jobs webhooks named

	// Poll state, read and written by the poll goroutine alone.
	runs      map[int64]*runState
	truncated bool // the last poll left queued runs unread
	paced     bool // the last interval was stretched by budgetPace

	// Webhooks (classic_hooks.go), under mu: the last one heard, the queued
	// jobs they announced, the last queued job found unannounced, and the
	// kinds of nudges since the last poll.
	hookAt      time.Time
	announced   map[int64]time.Time
	missAt      time.Time
	queuedNudge bool
	fullNudge   bool
	pending     map[int64][]int64 // runs queued webhooks named since the last poll, and their jobs
}

type runState struct {
	status  string
	updated time.Time
	fetched bool // its jobs were read at this status
	jobs    []int64
	// heard is set when a webhook's word, not a read, moved the run from
	// queued to in progress: its jobs are re-read only once the run lists
	// changed again (a read now would be charged for what is known).
	heard bool
	// left is when the run was first found off the queued and in-progress
	// lists with jobs not completed (waiting for an approval, say).
	left time.Time
}

type trackedJob struct {
	repo  string
	since time.Time
	// heard is when a webhook said the job started on a runner: it is
	// re-read only WebhookBackstopPoll later (a read now would be charged
	// for what is known), in case its end's webhook is lost.
	heard time.Time
}

// watcher returns the scope's watcher with sub subscribed, starting its
// poll if it is not running.
func (h *demandHub) watcher(c *Client, scope rm.Scope, log *slog.Logger, sub *demandSub) *scopeWatcher {
	w := h.subscribe(c, scope, log, sub)
	// A target that joins a watcher that has polled learns the figure and
	// the evidence at once, not a poll later.
	w.fanOut(nil, true, false)
	return w
}

func (h *demandHub) subscribe(c *Client, scope rm.Scope, log *slog.Logger, sub *demandSub) *scopeWatcher {
	key := strings.ToLower(scope.String())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers == nil {
		h.watchers = map[string]*scopeWatcher{}
	}
	w := h.watchers[key]
	if w == nil {
		w = &scopeWatcher{c: c, hub: h, key: key, scope: scope, log: log.With("scope", scope.String()),
			nudge: make(chan struct{}, 1), subs: map[*demandSub]struct{}{},
			jobs: map[int64]*jobState{}, tracked: map[int64]trackedJob{}, runs: map[int64]*runState{}}
		h.watchers[key] = w
	}
	h.subs++
	sub.seq = h.subs
	w.mu.Lock()
	w.refs++
	w.subs[sub] = struct{}{}
	start := !w.running
	if start {
		ctx, cancel := context.WithCancel(context.Background())
		w.running, w.cancel = true, cancel
		go w.run(ctx)
	}
	w.mu.Unlock()
	return w
}

// existing returns the scope's watcher if one runs.
func (h *demandHub) existing(scope rm.Scope) *scopeWatcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchers[strings.ToLower(scope.String())]
}

// release ends sub's subscription; the last one stops the watcher.
func (w *scopeWatcher) release(sub *demandSub) {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.subs[sub]; !ok {
		return
	}
	delete(w.subs, sub)
	w.refs--
	if w.refs == 0 {
		if w.cancel != nil {
			w.cancel()
		}
		w.running = false
		delete(w.hub.watchers, w.key)
	}
}

// Nudge makes the watcher poll now (at most once a second).
func (w *scopeWatcher) Nudge() {
	w.mu.Lock()
	w.fullNudge = true
	w.mu.Unlock()
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// interval is the wait before the next poll: the shortest busy interval
// of the subscribers while the last poll left queued runs unread (there is
// more work than the figure says), else the shortest idle one.
func (w *scopeWatcher) interval() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var d time.Duration
	for s := range w.subs {
		x := s.idle
		if w.truncated || (w.scope.Kind != rm.ScopeRepository && len(w.tracked) > 0) {
			x = s.busy
		}
		if d == 0 || x < d {
			d = x
		}
	}
	if d <= 0 {
		d = DefaultClassicPoll
	}
	if !w.truncated && w.relaxed(w.c.cfg.Now()) {
		d = max(d, WebhookBackstopPoll)
	}
	paced := budgetPace(d, w.c.Budget(), w.c.cfg.Now())
	if slow := paced > d; slow != w.paced {
		w.paced = slow
		b := w.c.Budget()
		if slow {
			w.log.Warn("demand polls slowed to spare the REST budget for launches", "remaining", b.Remaining, "limit", b.Limit, "reset", b.Reset, "poll", paced)
		} else {
			w.log.Info("demand polls at their interval again", "remaining", b.Remaining, "limit", b.Limit)
		}
	}
	return paced
}

// MaxBudgetPoll is the longest a classic demand poll is stretched to while
// the REST budget runs low (see budgetPace).
const MaxBudgetPoll = time.Minute

// budgetPace stretches the poll interval d while the core REST budget b
// runs low, so that polling never spends what launches need (a JIT
// configuration per runner, the removal of a registration): while half
// the budget is left the poll is d; below, it lengthens in inverse
// proportion to what is left above a reserve of a tenth, up to
// MaxBudgetPoll once only the reserve is left, and never past the reset.
// A webhook's nudge still polls at once. Polls of an unchanged repository
// cost nothing, so an idle host is never slowed by this; a busy one
// whose polls are charged is, before GitHub refuses it for up to an hour.
func budgetPace(d time.Duration, b rm.Budget, now time.Time) time.Duration {
	if b.SeenAt.IsZero() || b.Limit <= 0 || !now.Before(b.Reset) {
		return d
	}
	half, reserve := b.Limit/2, b.Limit/10
	if b.Remaining >= half {
		return d
	}
	paced := MaxBudgetPoll
	if spare := b.Remaining - reserve; spare > 0 {
		paced = min(time.Duration(float64(d)*float64(half-reserve)/float64(spare)), MaxBudgetPoll)
	}
	return max(d, min(paced, b.Reset.Sub(now)))
}

// run polls until ctx ends or GitHub refuses the credentials or the scope.
func (w *scopeWatcher) run(ctx context.Context) {
	failures := 0
	nudged := true // the first poll reports to every subscriber
	announced := false
	for {
		var (
			events []rm.JobEvent
			err    error
		)
		if w.scope.Kind == rm.ScopeRepository {
			events, err = w.pollRepo(ctx, announced)
			announced = false
		} else {
			events, err = w.pollTracked(ctx)
		}
		wait := w.interval()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			failures = 0
			w.fanOut(events, false, nudged)
		case errors.Is(err, rm.ErrUnauthorized), errors.Is(err, rm.ErrNotFound):
			w.fail(err)
			return
		default:
			if rle, ok := asRateLimit(err); ok {
				wait = max(rle.Reset.Sub(w.c.cfg.Now()), time.Second)
				w.log.Warn("demand poll waits for the rate limit to lift", "until", rle.Reset, "secondary", rle.Secondary)
			} else {
				wait = outage.Wait(failures)
				failures++
				w.log.Warn("demand poll failed, retrying", "err", err, "wait", wait)
			}
			if err := w.c.cfg.Sleep(ctx, wait); err != nil {
				return
			}
			continue
		}
		timer := time.NewTimer(wait)
		nudged = false
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-w.nudge:
			nudged = true // someone asked: tell every target what the poll found
		case <-timer.C:
		}
		timer.Stop()
		announced = w.takeNudges(!nudged)
		if gap := minPollGap - w.c.cfg.Now().Sub(w.lastPoll()); gap > 0 {
			if err := w.c.cfg.Sleep(ctx, gap); err != nil {
				return
			}
		}
	}
}

func (w *scopeWatcher) lastPoll() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.polledAt
}

// fail tells every subscriber the error that ended the watcher.
func (w *scopeWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running = false
	for s := range w.subs {
		select {
		case s.fatal <- err:
		default:
		}
	}
}

// fanOut reports to each subscriber its demand and the events of its
// jobs; a subscriber's first report carries all the evidence the watcher
// holds (jobs started and recently completed), so that nothing is
// suppressed after a start.
// With onlyNew, only subscribers not yet reported to are, and only once
// the watcher has polled. A subscriber whose figure is unchanged and who
// has no event is left out, unless all (a nudged poll) or its last report
// is older than unchangedReportEvery.
func (w *scopeWatcher) fanOut(events []rm.JobEvent, onlyNew, all bool) {
	type out struct {
		sub *demandSub
		d   rm.Demand
	}
	var outs []out
	w.mu.Lock()
	if onlyNew && !w.polled {
		w.mu.Unlock()
		return
	}
	at := w.at
	// Each job's owner once per fan-out, not once per subscription.
	owners := make(map[int64]*demandSub, len(w.jobs))
	var unmatched []rm.PendingJob
	for id, st := range w.jobs {
		owners[id] = w.owner(st)
		if owners[id] == nil && st.status == "queued" && wantsSelfHosted(st.labels) {
			unmatched = append(unmatched, w.pendingJob(st))
		}
	}
	sortPending(unmatched)
	for s := range w.subs {
		if onlyNew && s.primed {
			continue
		}
		d := rm.Demand{At: at, PendingListed: true}
		for id, st := range w.jobs {
			if owners[id] == s && s.counts(st) {
				d.Wanted++
				if st.status == "queued" {
					d.Pending = append(d.Pending, w.pendingJob(st))
				}
			}
		}
		d.Unmatched = unmatched
		sortPending(d.Pending)
		evs := events
		first := !s.primed
		if !s.primed {
			evs = w.evidence()
			s.primed = true
		}
		for _, e := range evs {
			if MatchLabels(e.Labels, s.labels) {
				d.Events = append(d.Events, e)
			}
		}
		if !onlyNew && !all && !first && len(d.Events) == 0 && d.Wanted == s.lastWanted && at.Sub(s.lastAt) < unchangedReportEvery {
			continue // nothing new for this target
		}
		s.lastWanted, s.lastAt = d.Wanted, at
		outs = append(outs, out{s, d})
	}
	w.mu.Unlock()
	for _, o := range outs {
		o.sub.report(o.d)
	}
}

// evidence is every job event the watcher can vouch for now: runners that
// hold jobs and runners whose jobs completed within the last hour. w.mu is
// held.
func (w *scopeWatcher) evidence() []rm.JobEvent {
	var evs []rm.JobEvent
	for _, id := range slices.Sorted(maps.Keys(w.jobs)) {
		if st := w.jobs[id]; st.runnerName != "" && st.status == "in_progress" {
			evs = append(evs, st.event(rm.JobStarted, w.at))
		}
	}
	for _, st := range w.recent {
		if st.runnerName != "" {
			evs = append(evs, st.event(rm.JobStarted, w.at), st.event(rm.JobCompleted, w.at))
		}
	}
	return evs
}

// apply records a job's new state and returns the events its change
// makes: JobStarted once a runner holds it, JobCompleted once it is done.
// A job first seen done gives both. w.mu is held.
func (w *scopeWatcher) apply(st *jobState, now time.Time) []rm.JobEvent {
	prev := w.jobs[st.id]
	if prev == nil {
		if i := slices.IndexFunc(w.recent, func(r *jobState) bool { return r.id == st.id }); i >= 0 {
			return nil // already reported done
		}
	}
	var evs []rm.JobEvent
	taken := st.runnerName != "" && (st.status == "in_progress" || st.status == "completed")
	if taken && (prev == nil || prev.runnerName == "") {
		evs = append(evs, st.event(rm.JobStarted, now))
	}
	if st.status == "completed" {
		if prev != nil && st.runnerName == "" {
			st.runnerName, st.runnerID = prev.runnerName, prev.runnerID
		}
		evs = append(evs, st.event(rm.JobCompleted, now))
		delete(w.jobs, st.id)
		st.seen = now
		w.recent = append(w.recent, st)
		if over := len(w.recent) - recentJobs; over > 0 {
			w.recent = slices.Delete(w.recent, 0, over)
		}
		return evs
	}
	w.jobs[st.id] = st
	return evs
}

// forget drops what is older than the memory bounds. w.mu is held.
func (w *scopeWatcher) forget(now time.Time) {
	w.recent = slices.DeleteFunc(w.recent, func(st *jobState) bool { return now.Sub(st.seen) > recentFor })
}

// pendingJob is a queued job as the jobs view lists it.
func (w *scopeWatcher) pendingJob(st *jobState) rm.PendingJob {
	repo := st.repo
	if repo == "" && w.scope.Kind == rm.ScopeRepository {
		repo = w.scope.Name
	}
	return rm.PendingJob{ID: restJobID(st.id), Number: st.id, RunID: st.runID, Repository: repo, Workflow: st.workflow,
		Name: st.name, Labels: st.labels, QueuedAt: st.queuedAt}
}

// sortPending orders jobs oldest first (ties by id, so every poll lists
// them alike).
func sortPending(jobs []rm.PendingJob) {
	slices.SortFunc(jobs, func(a, b rm.PendingJob) int {
		if c := a.QueuedAt.Compare(b.QueuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// wantsSelfHosted reports whether a job asks for a self-hosted runner by
// the label every self-hosted runner carries ("self-hosted", compared as
// GitHub compares labels, without regard to case): of the repository's
// queued jobs that no policy matches, only those are news to a person; a
// job for GitHub's own runners (ubuntu-latest) is not.
func wantsSelfHosted(labels []string) bool {
	return slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, "self-hosted") })
}
