package reconcile

import (
	"cmp"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// Bounds of the loop's memory of job starts and ends.
const (
	// jobStartWindow is how far back a policy's job start figures reach
	// (status.Policy.JobStart).
	jobStartWindow = time.Hour
	// maxJobStarts bounds the starts kept for them (the newest).
	maxJobStarts = 5000
	// maxEndsSeen bounds the completed jobs remembered so that one told
	// twice (a classic watch's evidence after a restart) counts once.
	maxEndsSeen = 4096
)

// jobStartSample is one job's start, for the figures.
type jobStartSample struct {
	at     time.Time
	policy rm.PolicyID
	split  rm.StartSplit
}

// jobStarted notes how a job of pol started and tells OnJobStarted.
func (l *Loop) jobStarted(pol *rm.Policy, s rm.StartSplit, now time.Time) {
	l.mu.Lock()
	l.starts = append(l.starts, jobStartSample{at: now, policy: pol.ID, split: s})
	if over := len(l.starts) - maxJobStarts; over > 0 {
		l.starts = slices.Delete(l.starts, 0, over)
	}
	l.mu.Unlock()
	if l.cfg.OnJobStarted != nil {
		l.cfg.OnJobStarted(pol.Name, s)
	}
}

// observeJobEnd tells OnJobEnded how long a job of pol ran, once per job,
// when GitHub gave its runner assignment and its finish.
func (l *Loop) observeJobEnd(pol *rm.Policy, ev rm.JobEvent) {
	if l.cfg.OnJobEnded == nil || ev.JobID == "" || ev.RunnerAssignedAt.IsZero() || ev.FinishedAt.IsZero() {
		return
	}
	l.mu.Lock()
	if slices.Contains(l.endsSeen, ev.JobID) {
		l.mu.Unlock()
		return
	}
	l.endsSeen = append(l.endsSeen, ev.JobID)
	if over := len(l.endsSeen) - maxEndsSeen; over > 0 {
		l.endsSeen = slices.Delete(l.endsSeen, 0, over)
	}
	l.mu.Unlock()
	l.cfg.OnJobEnded(pol.Name, ev.Result, max(0, ev.FinishedAt.Sub(ev.RunnerAssignedAt)))
}

// pruneStarts forgets the starts older than the window. l.mu is held.
func (l *Loop) pruneStarts(now time.Time) {
	l.starts = slices.DeleteFunc(l.starts, func(s jobStartSample) bool { return now.Sub(s.at) > jobStartWindow })
}

// jobStartStatus is pol's figures of the last hour (pruneStarts first).
// l.mu is held.
func (l *Loop) jobStartStatus(pol rm.PolicyID) status.JobStart {
	var total, ours []time.Duration
	for _, s := range l.starts {
		if s.policy == pol {
			total = append(total, s.split.Total())
			ours = append(ours, s.split.Ready)
		}
	}
	if len(total) == 0 {
		return status.JobStart{}
	}
	return status.JobStart{Jobs: len(total), P50: quantile(total, 0.5), P95: quantile(total, 0.95),
		OursP50: quantile(ours, 0.5), OursP95: quantile(ours, 0.95)}
}

// quantile is the q-th quantile of ds by the nearest rank (ds is sorted
// in place; it must not be empty).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.SortFunc(ds, cmp.Compare[time.Duration])
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
