package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// leaseSlot leases the workspace slot the attempt runs in, when it runs
// warm: a repository's policy, not Cold, whose launcher runs warm. An
// organization's or an enterprise's policy runs cold: its repository is
// known only with the job, after the runner started (docs/warm.md). A
// failed lease runs the attempt cold and says why.
func (l *Loop) leaseSlot(it *item) *rm.WarmSlot {
	pol := it.pol
	if l.cfg.Slots == nil || pol.Cold || pol.Target.Scope.Kind != rm.ScopeRepository {
		return nil
	}
	wl, ok := l.cfg.launcherFor(pol).(rm.WarmLauncher)
	if !ok || !wl.RunsWarm() {
		return nil
	}
	slot, err := l.cfg.Slots.Lease(pol.Backend.OrDefault(), pol.Target.Scope.Name, it.a.ID)
	if err != nil {
		it.log.Warn("no workspace slot: the attempt runs cold", "err", err)
		return nil
	}
	return &slot
}

// warmFree is how many warm slots of the loop's repository wait free on
// this host, for a loop of one warm repository policy (a fleet policy's):
// 0 otherwise.
func (p *pass) warmFree() int {
	l := p.l
	if l.cfg.Slots == nil || len(p.policies) != 1 {
		return 0
	}
	pol := &p.policies[0]
	if pol.Cold || pol.Target.Scope.Kind != rm.ScopeRepository {
		return 0
	}
	if wl, ok := l.cfg.launcherFor(pol).(rm.WarmLauncher); ok && wl.RunsWarm() {
		return l.cfg.Slots.Free(pol.Backend.OrDefault(), pol.Target.Scope.Name)
	}
	return 0
}

// releaseSlot gives back the slot attempt a held. Its writes are kept
// only when no job ran in it, or GitHub says the job's run did not come
// from a fork: a fork's pull request never writes what a trusted run
// later reads, and a run GitHub cannot vouch for counts as a fork.
func (l *Loop) releaseSlot(ctx context.Context, pol *rm.Policy, a rm.Attempt, log *slog.Logger) {
	if l.cfg.Slots == nil || a.Slot == "" {
		return
	}
	discard, why := l.untrusted(ctx, pol, a)
	if discard {
		log.Info("workspace slot emptied: "+why, "slot", a.Slot)
	}
	if err := l.cfg.Slots.Release(a.ID, discard); err != nil {
		log.Warn("could not give the workspace slot back", "slot", a.Slot, "err", err)
	}
}

// releaseSlotOnWord gives back the slot of concluded attempt a, judged by
// GitHub's word on its job's run (githubRun), never by what the runner's
// own trace or the job's hook recorded: a job can rewrite those. When a
// job ran and GitHub has not named its run yet (a short job's runner ends
// before the word is applied), the slot stays held until the word comes
// (wordCame) or the job-word grace ends (emptied then: expireWords).
func (l *Loop) releaseSlotOnWord(ctx context.Context, pol *rm.Policy, a rm.Attempt, githubRun int64, log *slog.Logger) {
	if l.cfg.Slots == nil || a.Slot == "" {
		return
	}
	ran := !a.BusyAt.IsZero() || a.Job.Known() || a.Job.RunID != 0 || a.Outcome.Kind == rm.CompletedJob
	a.Job.RunID = githubRun
	if ran && githubRun == 0 {
		l.awaitMu.Lock()
		if l.awaiting == nil {
			l.awaiting = map[rm.AttemptID]awaitingWord{}
		}
		l.awaiting[a.ID] = awaitingWord{pol: *pol, a: a, until: l.cfg.Now().Add(l.cfg.JobWordGrace), log: log}
		l.awaitMu.Unlock()
		return
	}
	l.releaseSlot(ctx, pol, a, log)
}

// awaitingWord is a concluded attempt whose slot waits for GitHub's word
// on its job's run.
type awaitingWord struct {
	pol   rm.Policy
	a     rm.Attempt
	until time.Time
	log   *slog.Logger
}

// wordCame takes GitHub's word on the run of concluded attempt id's job,
// when its slot waits for it.
func (l *Loop) wordCame(ctx context.Context, id rm.AttemptID, run int64) {
	if run == 0 {
		return
	}
	l.awaitMu.Lock()
	w, ok := l.awaiting[id]
	delete(l.awaiting, id)
	l.awaitMu.Unlock()
	if ok {
		w.a.Job.RunID = run
		l.releaseSlot(ctx, &w.pol, w.a, w.log)
	}
}

// expireWords empties the slots whose attempts' word did not come within
// the grace, or every waiting one (all: the loop stops).
func (l *Loop) expireWords(ctx context.Context, all bool) {
	now := l.cfg.Now()
	l.awaitMu.Lock()
	var due []awaitingWord
	for id, w := range l.awaiting {
		if all || now.After(w.until) {
			due = append(due, w)
			delete(l.awaiting, id)
		}
	}
	l.awaitMu.Unlock()
	for _, w := range due {
		w.a.Job.RunID = 0 // unknown: emptied
		l.releaseSlot(ctx, &w.pol, w.a, w.log)
	}
}

// untrusted says whether what attempt a wrote in its slot must go, and why.
func (l *Loop) untrusted(ctx context.Context, pol *rm.Policy, a rm.Attempt) (bool, string) {
	if a.BusyAt.IsZero() && !a.Job.Known() && a.Job.RunID == 0 && a.Outcome.Kind != rm.CompletedJob {
		return false, "" // no job ran: nothing but the runner touched it
	}
	if a.Job.RunID == 0 {
		return true, "the job's workflow run is not known, so neither is whether it came from a fork"
	}
	origins, ok := l.cfg.Target.Registrar.(rm.RunOrigins)
	if !ok {
		return true, "GitHub cannot be asked whether the job's run came from a fork"
	}
	// Asked even while the loop stops (the slot would otherwise be emptied
	// for want of an answer), bounded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forkAskTimeout)
	defer cancel()
	fork, err := l.forks.ask(ctx, origins, pol.Target.Scope.Name, a.Job.RunID)
	switch {
	case err != nil:
		return true, "GitHub could not say whether the job's run came from a fork: " + err.Error()
	case fork:
		return true, "the job's run came from a fork"
	}
	return false, ""
}

// prefetchOrigins asks GitHub, in the background, whether the runs of the
// warm attempts' jobs came from forks, while the jobs run: the answer is
// at hand when an attempt ends, and its slot goes back at once.
func (p *pass) prefetchOrigins(ctx context.Context) {
	l := p.l
	if l.cfg.Slots == nil || p.isQuiet() {
		return
	}
	origins, ok := l.cfg.Target.Registrar.(rm.RunOrigins)
	if !ok {
		return
	}
	for _, it := range p.items {
		if it.a.Slot == "" || it.a.Job.RunID == 0 {
			continue
		}
		repo, run := it.pol.Target.Scope.Name, it.a.Job.RunID
		if !l.forks.start(run) {
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forkAskTimeout)
			defer cancel()
			_, _ = l.forks.ask(ctx, origins, repo, run)
			l.forks.done(run)
		}()
	}
}

// forkRuns remembers GitHub's word on recent runs: a run's jobs (a matrix)
// ask once.
type forkRuns struct {
	mu       sync.Mutex
	seen     map[int64]bool
	inflight map[int64]bool
}

// start reports whether run is neither known nor being asked, and marks
// it asked.
func (f *forkRuns) start(run int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.seen[run]; ok || f.inflight[run] {
		return false
	}
	if f.inflight == nil {
		f.inflight = map[int64]bool{}
	}
	f.inflight[run] = true
	return true
}

func (f *forkRuns) done(run int64) {
	f.mu.Lock()
	delete(f.inflight, run)
	f.mu.Unlock()
}

// forkAskTimeout bounds GitHub's answer on a run's origin when the
// attempt ends (it is asked ahead, while the job runs: prefetchOrigins).
const forkAskTimeout = 5 * time.Second

// forkRunsKept bounds what forkRuns remembers.
const forkRunsKept = 256

func (f *forkRuns) ask(ctx context.Context, o rm.RunOrigins, repo string, run int64) (bool, error) {
	f.mu.Lock()
	fork, ok := f.seen[run]
	f.mu.Unlock()
	if ok {
		return fork, nil
	}
	fork, err := o.ForkRun(ctx, repo, run)
	if err != nil {
		return true, err
	}
	f.mu.Lock()
	if f.seen == nil || len(f.seen) >= forkRunsKept {
		f.seen = map[int64]bool{}
	}
	f.seen[run] = fork
	f.mu.Unlock()
	return fork, nil
}
