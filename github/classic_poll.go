package github

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"

	rm "github.com/runner-manager/runner-manager"
)

// pollRepo lists the repository's queued and in-progress runs and its
// runs completed lately, and reads the jobs of the runs that need it:
// every run in progress (revalidated: unchanged costs nothing), every
// run that left the lists (to learn how its jobs ended and on which
// runner), and the queued runs, newest first, until every subscriber knows
// of enough jobs to keep launching until the next poll. The oldest queued
// runs are the ones runners take first: leaving them unread until they
// start reads most jobs once, not twice.
//
// With announced (webhooks announced queued jobs, and the webhooks are
// relied on) it reads the runs they named alone (readAnnounced).
func (w *scopeWatcher) pollRepo(ctx context.Context, announced bool) ([]rm.JobEvent, error) {
	owner, repo, _ := strings.Cut(w.scope.Name, "/")
	now := w.c.cfg.Now()
	if announced {
		return w.readAnnounced(ctx, owner, repo, now)
	}
	active := map[int64]*gh.WorkflowRun{}
	for _, status := range []string{"queued", "in_progress"} {
		runs, err := w.listRuns(ctx, owner, repo, &gh.ListWorkflowRunsOptions{Status: status}, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			active[r.GetID()] = r
		}
	}
	// Runs completed within the last hour or two (the filter moves once an
	// hour, so that its URL, and its ETag, stay put), newest first.
	since := now.Add(-recentFor).UTC().Truncate(time.Hour)
	done, err := w.listRuns(ctx, owner, repo, &gh.ListWorkflowRunsOptions{Status: "completed", Created: ">=" + since.Format(time.RFC3339)}, 1)
	if err != nil {
		return nil, err
	}
	doneByID := map[int64]*gh.WorkflowRun{}
	for _, r := range done {
		doneByID[r.GetID()] = r
	}

	w.mu.Lock()
	first := !w.polled
	w.mu.Unlock()

	var read []int64         // runs whose jobs to read now
	var queued []int64       // queued runs not read yet
	var events []rm.JobEvent // from runs completed without a read
	for id, r := range active {
		prev := w.runs[id]
		switch r.GetStatus() {
		case "in_progress":
			if w.heardStart(prev, r) {
				continue
			}
			read = append(read, id)
		default:
			if prev != nil && prev.fetched && prev.status == r.GetStatus() && prev.updated.Equal(r.GetUpdatedAt().Time) {
				continue
			}
			queued = append(queued, id)
		}
	}
	for id, prev := range w.runs {
		if _, ok := active[id]; ok {
			continue
		}
		// The run left the lists: completed (or deleted). A run whose jobs
		// all completed by a webhook's word needs no read (whether or not
		// the one page of completed runs still shows it), nor does a
		// one-job run whose runner is known: the completed list says how
		// it ended.
		if prev.fetched && w.allDone(prev.jobs) {
			delete(w.runs, id)
			continue
		}
		if r, ok := doneByID[id]; ok && prev.fetched && len(prev.jobs) == 1 {
			w.mu.Lock()
			st := w.jobs[prev.jobs[0]]
			if st != nil && st.runnerName != "" {
				c := *st
				c.status, c.conclusion = "completed", r.GetConclusion()
				events = append(events, w.apply(&c, now)...)
				w.mu.Unlock()
				delete(w.runs, id)
				continue
			}
			w.mu.Unlock()
		}
		read = append(read, id)
	}
	if first {
		// Evidence for runners that ended while the manager was down: the
		// jobs of the runs completed last.
		recent := slices.Clone(done)
		slices.SortFunc(recent, func(a, b *gh.WorkflowRun) int { return b.GetUpdatedAt().Compare(a.GetUpdatedAt().Time) })
		for _, r := range recent[:min(len(recent), startupRuns)] {
			if _, ok := w.runs[r.GetID()]; !ok {
				read = append(read, r.GetID())
			}
		}
	}
	slices.Sort(read)
	read = slices.Compact(read)
	for _, id := range read {
		evs, err := w.readRun(ctx, owner, repo, id, active[id], now)
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
	}

	// Queued runs, newest first, while a subscriber knows of too few jobs.
	slices.SortFunc(queued, func(a, b int64) int { return cmp.Compare(b, a) })
	truncated := false
	for i, id := range queued {
		if !w.short() {
			truncated = true
			for _, rest := range queued[i:] {
				if w.runs[rest] == nil {
					w.runs[rest] = &runState{status: active[rest].GetStatus(), updated: active[rest].GetUpdatedAt().Time}
				}
			}
			break
		}
		evs, err := w.readRun(ctx, owner, repo, id, active[id], now)
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
	}

	w.mu.Lock()
	w.polled, w.at, w.polledAt, w.truncated = true, now, now, truncated
	w.forget(now)
	w.mu.Unlock()
	return events, nil
}

// short reports whether a subscriber knows of fewer queued jobs than it
// wants.
func (w *scopeWatcher) short() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs {
		n := 0
		for _, st := range w.jobs {
			if st.status == "queued" && MatchLabels(st.labels, s.labels) {
				n++
			}
		}
		if n < s.want() {
			return true
		}
	}
	return false
}

// listRuns lists runs, every page, or at most pages when above 0.
func (w *scopeWatcher) listRuns(ctx context.Context, owner, repo string, opts *gh.ListWorkflowRunsOptions, pages int) ([]*gh.WorkflowRun, error) {
	opts.PerPage = 100
	var out []*gh.WorkflowRun
	for n := 1; ; n++ {
		runs, resp, err := w.c.gh.Actions.ListRepositoryWorkflowRuns(ctx, owner, repo, opts)
		if err != nil {
			return nil, restError(err, "list "+opts.Status+" workflow runs of "+w.scope.Name, w.scope)
		}
		out = append(out, runs.WorkflowRuns...)
		if resp.NextPage == 0 || (pages > 0 && n >= pages) {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// readRun reads the jobs of one run (conditional: unchanged costs
// nothing) and records them; r is the run as listed (nil: left the lists).
func (w *scopeWatcher) readRun(ctx context.Context, owner, repo string, runID int64, r *gh.WorkflowRun, now time.Time) ([]rm.JobEvent, error) {
	opts := &gh.ListWorkflowJobsOptions{Filter: "latest", ListOptions: gh.ListOptions{PerPage: 100}}
	var states []*jobState
	for {
		jobs, resp, err := w.c.gh.Actions.ListWorkflowJobs(ctx, owner, repo, runID, opts)
		if err != nil {
			if status, _, _ := statusOf(err); status == http.StatusNotFound {
				break // the run was deleted meanwhile
			}
			return nil, restError(err, fmt.Sprintf("list jobs of run %d of %s", runID, w.scope.Name), w.scope)
		}
		for _, j := range jobs.Jobs {
			states = append(states, jobOf(j, now))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	rs := &runState{fetched: true}
	if prev := w.runs[runID]; prev != nil {
		// Jobs the run no longer lists (a deleted run, a re-run's older
		// attempt) are not demand any more.
		w.mu.Lock()
		for _, id := range prev.jobs {
			if !slices.ContainsFunc(states, func(st *jobState) bool { return st.id == id }) {
				delete(w.jobs, id)
			}
		}
		w.mu.Unlock()
	}
	if r != nil {
		rs.status, rs.updated = r.GetStatus(), r.GetUpdatedAt().Time
		if rs.status == "queued" {
			w.checkAnnounced(states, now)
		}
	}
	var evs []rm.JobEvent
	open := false
	w.mu.Lock()
	for _, st := range states {
		rs.jobs = append(rs.jobs, st.id)
		evs = append(evs, w.apply(st, now)...)
		open = open || st.status != "completed"
	}
	w.mu.Unlock()
	switch {
	case r == nil && !open:
		delete(w.runs, runID)
	case r == nil:
		// Off the lists, not done: re-read (for free while unchanged)
		// for an hour, then forgotten with its jobs.
		rs.left = now
		if prev := w.runs[runID]; prev != nil && !prev.left.IsZero() {
			rs.left = prev.left
		}
		if now.Sub(rs.left) > recentFor {
			w.mu.Lock()
			for _, id := range rs.jobs {
				delete(w.jobs, id)
			}
			w.mu.Unlock()
			delete(w.runs, runID)
			break
		}
		w.runs[runID] = rs
	default:
		w.runs[runID] = rs
	}
	return evs, nil
}

func jobOf(j *gh.WorkflowJob, now time.Time) *jobState {
	st := &jobState{id: j.GetID(),
		status: j.GetStatus(), runID: j.GetRunID(), runnerID: j.GetRunnerID(), runnerName: j.GetRunnerName(),
		conclusion: j.GetConclusion(), workflow: j.GetWorkflowName(), name: j.GetName(), labels: j.Labels, seen: now,
		queuedAt: j.GetCreatedAt().Time,
	}
	if st.status != "queued" {
		st.startedAt = j.GetStartedAt().Time
	}
	if st.status == "completed" {
		st.completedAt = j.GetCompletedAt().Time
	}
	return st
}

// track notes a job a webhook named, for an organization or enterprise
// watcher to verify against the API; the webhook's own word is not
// counted.
func (w *scopeWatcher) track(jobID int64, repo string) {
	if jobID == 0 || !strings.Contains(repo, "/") {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.tracked[jobID]; ok {
		return
	}
	if slices.ContainsFunc(w.recent, func(st *jobState) bool { return st.id == jobID }) {
		return // known done
	}
	if len(w.tracked) >= maxTracked {
		var oldest int64
		var at time.Time
		for id, tj := range w.tracked {
			if oldest == 0 || tj.since.Before(at) {
				oldest, at = id, tj.since
			}
		}
		delete(w.tracked, oldest)
		delete(w.jobs, oldest)
	}
	w.tracked[jobID] = trackedJob{repo: repo, since: w.c.cfg.Now()}
}

// pollTracked re-reads each job webhooks named (GET
// /repos/{owner}/{repo}/actions/jobs/{id}, conditional) until it
// completes: only what the API says is demand.
func (w *scopeWatcher) pollTracked(ctx context.Context) ([]rm.JobEvent, error) {
	now := w.c.cfg.Now()
	w.mu.Lock()
	tracked := maps.Clone(w.tracked)
	w.mu.Unlock()
	var events []rm.JobEvent
	for _, id := range slices.Sorted(maps.Keys(tracked)) {
		tj := tracked[id]
		if !tj.heard.IsZero() && now.Sub(tj.heard) < WebhookBackstopPoll {
			continue
		}
		owner, repo, _ := strings.Cut(tj.repo, "/")
		j, _, err := w.c.gh.Actions.GetWorkflowJobByID(ctx, owner, repo, id)
		if status, _, _ := statusOf(err); status == http.StatusNotFound {
			w.mu.Lock()
			delete(w.tracked, id)
			delete(w.jobs, id)
			w.mu.Unlock()
			continue
		}
		if err != nil {
			return nil, restError(err, fmt.Sprintf("get job %d of %s", id, tj.repo), w.scope)
		}
		st := jobOf(j, now)
		st.repo = tj.repo
		w.mu.Lock()
		events = append(events, w.apply(st, now)...)
		if st.status == "completed" {
			delete(w.tracked, id)
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.polled, w.at, w.polledAt = true, now, now
	w.forget(now)
	w.mu.Unlock()
	return events, nil
}
