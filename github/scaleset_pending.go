package github

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/actions/scaleset"

	rm "github.com/runner-manager/runner-manager"
)

// maxPending bounds a scale set's book of pending jobs: a person reads the
// oldest; the statistics count the rest.
const maxPending = 500

// pendingBook is the jobs of a scale set that GitHub offered (JobAvailable)
// or assigned (JobAssigned) and no runner has started yet, kept from the
// job messages across polls and sessions, so that `jobs` can name them.
//
// Messages are deltas, and one can be missed (a session restarted, a
// message acknowledged and its batch cut at 50): the statistics that come
// with every message bound the book, so it never lists more than GitHub
// counts. Jobs assigned and not started are TotalAssignedJobs −
// TotalRunningJobs; jobs offered or acquired and waiting for capacity are
// TotalAvailableJobs + TotalAcquiredJobs (actions/scaleset v0.4.0
// types.go RunnerScaleSetStatistic). Beyond each count the oldest entries
// go first: jobs start in about the order GitHub queued them, so the
// oldest is the likeliest to have started unseen. It is for people only;
// scaling reads the statistics alone.
type pendingBook struct {
	mu   sync.Mutex
	jobs map[string]rm.PendingJob
}

// apply takes one message's jobs and statistics (st may be nil: counts
// unknown, nothing pruned) and returns the book, oldest first.
func (b *pendingBook) apply(msg *scaleset.RunnerScaleSetMessage, st *scaleset.RunnerScaleSetStatistic, now time.Time) []rm.PendingJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jobs == nil {
		b.jobs = make(map[string]rm.PendingJob)
	}
	if msg != nil {
		for _, j := range msg.JobAvailableMessages {
			b.add(j.JobMessageBase, false, now)
		}
		for _, j := range msg.JobAssignedMessages {
			b.add(j.JobMessageBase, true, now)
		}
		for _, j := range msg.JobStartedMessages {
			delete(b.jobs, jobEvent(rm.JobStarted, j.JobMessageBase, 0, "", "", now).JobID)
		}
		for _, j := range msg.JobCompletedMessages {
			// A canceled job GitHub requeues comes back as a new offer.
			delete(b.jobs, jobEvent(rm.JobCompleted, j.JobMessageBase, 0, "", "", now).JobID)
		}
	}
	list := b.list()
	if st != nil {
		assigned := max(st.TotalAssignedJobs-st.TotalRunningJobs, 0)
		offered := max(st.TotalAvailableJobs+st.TotalAcquiredJobs, 0)
		var kept []rm.PendingJob
		// Newest first, so the oldest beyond each count go.
		for _, j := range slices.Backward(list) {
			n := &offered
			if j.Assigned {
				n = &assigned
			}
			if *n == 0 {
				delete(b.jobs, j.ID)
				continue
			}
			*n--
			kept = append(kept, j)
		}
		slices.Reverse(kept)
		list = kept
	}
	for len(list) > maxPending {
		delete(b.jobs, list[0].ID)
		list = list[1:]
	}
	return list
}

// add notes a job offered or assigned; an offered job later assigned is
// kept as assigned, with its first queue time.
func (b *pendingBook) add(m scaleset.JobMessageBase, assigned bool, now time.Time) {
	ev := jobEvent(rm.JobAssigned, m, 0, "", "", now)
	if ev.JobID == "" {
		return
	}
	j, seen := b.jobs[ev.JobID]
	if !seen {
		j = rm.PendingJob{ID: ev.JobID, RunID: ev.RunID, Workflow: ev.Workflow, Name: ev.DisplayName,
			Labels: ev.Labels, QueuedAt: ev.QueuedAt}
		if m.OwnerName != "" && m.RepositoryName != "" {
			j.Repository = m.OwnerName + "/" + m.RepositoryName
		}
		if j.QueuedAt.IsZero() {
			j.QueuedAt = now
		}
	}
	j.Assigned = j.Assigned || assigned
	b.jobs[ev.JobID] = j
}

// list is the book, oldest first (ties by id, so the order is stable).
func (b *pendingBook) list() []rm.PendingJob {
	out := make([]rm.PendingJob, 0, len(b.jobs))
	for _, j := range b.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b rm.PendingJob) int {
		return cmp.Or(a.QueuedAt.Compare(b.QueuedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}
