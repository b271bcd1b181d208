package github

import (
	"context"
	"maps"
	"slices"
	"time"

	gh "github.com/google/go-github/v88/github"
	rm "github.com/runner-manager/runner-manager"
)

// What a repository watcher does with webhooks, besides being nudged.
const (
	// WebhookBackstopPoll is the poll of a repository whose webhooks are
	// seen to arrive (each queued job announced before a poll finds it):
	// a queued job's webhook has the run it names read (no list), a start
	// or an end the watcher holds comes by webhook, and this poll catches
	// what a lost delivery would miss.
	WebhookBackstopPoll = 30 * time.Second
	// hookFresh is how recent the last webhook of the scope must be for
	// the backstop poll to apply.
	hookFresh = 10 * time.Minute
	// missQuiet is how long after a queued job found without its webhook
	// the watcher polls at its own interval again.
	missQuiet = time.Hour
	// missAfter is how old a queued job found unannounced must be to count
	// as missed (GitHub's delivery takes a moment; a poll may come first).
	missAfter = 10 * time.Second
	// maxAnnounced bounds the queued jobs remembered as announced.
	maxAnnounced = 5000
)

// hookSeen notes a verified workflow_job webhook of the scope: when, and
// which job it announced queued.
func (w *scopeWatcher) hookSeen(ev WorkflowJobEvent) {
	now := w.c.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hookAt = now
	if ev.Action != "queued" || ev.JobID == 0 {
		return
	}
	if ev.RunID != 0 && len(w.pending) < maxAnnounced {
		if w.pending == nil {
			w.pending = map[int64][]int64{}
		}
		if !slices.Contains(w.pending[ev.RunID], ev.JobID) { // each matching target is told
			w.pending[ev.RunID] = append(w.pending[ev.RunID], ev.JobID)
		}
	}
	if w.announced == nil {
		w.announced = map[int64]time.Time{}
	}
	if len(w.announced) >= maxAnnounced {
		for id, at := range w.announced {
			if now.Sub(at) > recentFor {
				delete(w.announced, id)
			}
		}
		if len(w.announced) >= maxAnnounced {
			oldest := slices.MinFunc(slices.Collect(maps.Keys(w.announced)), func(a, b int64) int { return w.announced[a].Compare(w.announced[b]) })
			delete(w.announced, oldest)
		}
	}
	w.announced[ev.JobID] = now
}

// relaxed reports whether the repository's webhooks are seen to arrive:
// one came within hookFresh, and no queued job was found without its
// webhook within missQuiet. w.mu is held.
func (w *scopeWatcher) relaxed(now time.Time) bool {
	return w.scope.Kind == rm.ScopeRepository && !w.hookAt.IsZero() && now.Sub(w.hookAt) < hookFresh &&
		(w.missAt.IsZero() || now.Sub(w.missAt) >= missQuiet)
}

// checkAnnounced notes a queued job read from the API that no webhook
// announced although it has been queued long enough for one: the
// webhooks are not to be relied on, and the watcher polls at its own
// interval for missQuiet.
func (w *scopeWatcher) checkAnnounced(states []*jobState, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hookAt.IsZero() {
		return // no webhooks: nothing to rely on anyway
	}
	for _, st := range states {
		if st.status != "queued" || st.queuedAt.IsZero() || now.Sub(st.queuedAt) < missAfter {
			continue
		}
		if _, ok := w.announced[st.id]; ok {
			continue
		}
		if w.relaxed(now) {
			w.log.Info("a queued job came without its webhook: polling at the demand poll again", "job_id", st.id, "for", missQuiet)
		}
		w.missAt = now
		return
	}
}

// NudgeQueued makes the watcher look now: a webhook announced a queued
// job. While the webhooks are relied on, that look reads the runs the
// webhooks named (readAnnounced); otherwise it is a full poll.
func (w *scopeWatcher) NudgeQueued() {
	w.mu.Lock()
	w.queuedNudge = true
	w.mu.Unlock()
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

// takeNudges reports whether the poll about to run may read the runs the
// webhooks announced alone (only queued nudges since the last poll, the
// webhooks relied on, and half the REST budget left), and clears the
// nudges. timer is whether the
// interval ran out. A full poll forgets the announced runs: it lists them.
func (w *scopeWatcher) takeNudges(timer bool) (announced bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.c.cfg.Now()
	// A direct read is charged even for a replayed body's run (a list
	// that did not change would be free), so it is made only while the
	// budget is healthy: replays cannot spend more than half of it.
	healthy := budgetPace(time.Second, w.c.Budget(), now) == time.Second
	announced = !timer && w.queuedNudge && !w.fullNudge && w.polled && len(w.pending) > 0 && healthy && w.relaxed(now)
	w.queuedNudge, w.fullNudge = false, false
	if !announced {
		w.pending = nil
	}
	return announced
}

// readAnnounced reads the jobs of the runs queued webhooks named since the
// last poll, and not read yet: the API's answer is the demand (labels and
// status as GitHub has them), read once per run as a list's would be,
// without the charged list of queued runs a poll would make first. It
// does not move the figure's time, since it brings no word on runners
// that ended; the next full poll (the backstop, or a nudge) does.
func (w *scopeWatcher) readAnnounced(ctx context.Context, owner, repo string, now time.Time) ([]rm.JobEvent, error) {
	w.mu.Lock()
	pending := w.pending
	w.pending = nil
	var ids []int64
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		if !slices.ContainsFunc(pending[id], func(job int64) bool { return w.jobs[job] == nil && !w.doneLocked(job) }) {
			continue // each job it announced is held already (a poll read it)
		}
		ids = append(ids, id)
	}
	w.mu.Unlock()
	var events []rm.JobEvent
	for _, id := range ids {
		evs, err := w.readRun(ctx, owner, repo, id, &gh.WorkflowRun{ID: gh.Ptr(id), Status: gh.Ptr("queued")}, now)
		if err != nil {
			return nil, err // the retry is a full poll, which lists them
		}
		events = append(events, evs...)
	}
	w.mu.Lock()
	w.polled, w.polledAt = true, now
	w.mu.Unlock()
	return events, nil
}

// heardStart reports whether a run listed in progress needs no read of
// its jobs: the last read saw it queued and webhooks have since said on
// which runner each of its jobs started (or that it completed), or it was
// passed over so before and the lists show no change since. It records
// the run as seen in progress.
func (w *scopeWatcher) heardStart(prev *runState, r *gh.WorkflowRun) bool {
	if prev == nil || !prev.fetched {
		return false
	}
	if prev.heard {
		return prev.status == r.GetStatus() && prev.updated.Equal(r.GetUpdatedAt().Time)
	}
	if prev.status != "queued" || !w.allStarted(prev.jobs) {
		return false
	}
	prev.status, prev.updated, prev.heard = r.GetStatus(), r.GetUpdatedAt().Time, true
	return true
}

// allStarted reports whether every job of ids is held in progress on a
// named runner or has completed.
func (w *scopeWatcher) allStarted(ids []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if st := w.jobs[id]; st != nil {
			if st.status != "in_progress" || st.runnerName == "" {
				return false
			}
		} else if !w.doneLocked(id) {
			return false
		}
	}
	return len(ids) > 0
}

// allDone reports whether every job of ids is known completed.
func (w *scopeWatcher) allDone(ids []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if _, held := w.jobs[id]; held || !w.doneLocked(id) {
			return false
		}
	}
	return len(ids) > 0
}

func (w *scopeWatcher) doneLocked(id int64) bool {
	return slices.ContainsFunc(w.recent, func(st *jobState) bool { return st.id == id })
}

// heard takes a verified workflow_job webhook's word on a job the watcher
// already holds from the API: that it started on a runner (in_progress,
// for a job held queued) or that it completed (for a job held queued or in
// progress). Those are facts that stay true however late or often a
// signed payload arrives (a job id is one attempt's, a runner name one
// attempt's), so they are taken as they come, telling the targets at once
// and sparing the read of the run's jobs a poll would otherwise be charged
// for. What a webhook says of a job the watcher does not hold, or that it
// is queued, is never taken: it only nudges a poll, since demand must be
// what the API says (a signed body can be replayed). It reports whether
// the word was taken.
func (w *scopeWatcher) heard(ev WorkflowJobEvent) bool {
	w.mu.Lock()
	held := w.jobs[ev.JobID]
	if held == nil || held.runID != ev.RunID {
		w.mu.Unlock()
		return false
	}
	st := *held
	switch {
	case ev.Action == "in_progress" && ev.RunnerName != "" && held.status == "queued":
		st.status, st.runnerID, st.runnerName = "in_progress", ev.RunnerID, ev.RunnerName
	case ev.Action == "completed" && ev.Conclusion != "":
		st.status, st.conclusion = "completed", ev.Conclusion
		if ev.RunnerName != "" && held.runnerName == "" {
			st.runnerID, st.runnerName = ev.RunnerID, ev.RunnerName
		}
	default:
		w.mu.Unlock()
		return false
	}
	now := w.c.cfg.Now()
	st.seen = now
	events := w.apply(&st, now)
	if tj, ok := w.tracked[ev.JobID]; ok { // an organization's: read by id
		if st.status == "completed" {
			delete(w.tracked, ev.JobID)
		} else {
			tj.heard = now
			w.tracked[ev.JobID] = tj
		}
	}
	w.mu.Unlock()
	w.fanOut(events, false, false)
	return true
}
