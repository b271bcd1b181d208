package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// jobsOf is the loop's jobs view after a pass: the jobs its source listed
// as pending, less those a live runner of the loop already holds, with why
// they wait, then the jobs its runners run. serving is the policy a
// waiting job of the target goes to (the first active one). l.mu is held.
func (p *pass) jobsOf(serving rm.Policy, reason string) []status.Job {
	l := p.l
	var out []status.Job
	held := map[string]bool{}
	for _, it := range p.items {
		if it.concluded || !it.a.Job.Known() {
			continue
		}
		held[it.a.Job.ID] = true
		if it.a.State != rm.StateBusy {
			continue
		}
		out = append(out, status.Job{ID: it.a.Job.ID, Number: it.a.Job.Number, RunID: it.a.Job.RunID,
			Workflow: it.a.Job.Workflow, Name: it.a.Job.Name, State: status.JobRunning, Policy: it.pol.ID, PolicyName: it.pol.Name,
			StartedAt: it.a.BusyAt, Attempt: it.a.ID, RunnerName: it.a.RunnerName})
	}
	for _, j := range l.pending {
		if held[j.ID] {
			continue
		}
		js := pendingStatus(j, status.JobQueued)
		if j.Assigned {
			js.State = status.JobAssignedToTarget
		}
		js.Policy, js.PolicyName = serving.ID, serving.Name
		js.WaitReason = reason
		if js.WaitReason == "" {
			js.WaitReason = "runner starting"
			if !j.Assigned {
				js.WaitReason = "queued at GitHub"
			}
		}
		out = append(out, js)
	}
	for _, j := range l.unmatched {
		js := pendingStatus(j, status.JobUnmatched)
		js.WaitReason = "no policy here matches " + labelList(j.Labels)
		out = append(out, js)
	}
	return out
}

func pendingStatus(j rm.PendingJob, state string) status.Job {
	return status.Job{ID: j.ID, Number: j.Number, RunID: j.RunID, Repository: j.Repository, Workflow: j.Workflow,
		Name: j.Name, Labels: slices.Clone(j.Labels), State: state, QueuedAt: j.QueuedAt}
}

func labelList(labels []string) string { return "[" + strings.Join(labels, ", ") + "]" }

// servingPolicy is the policy a waiting job of the loop's target goes to:
// the first active one by name, else the first.
func servingPolicy(policies []rm.Policy) rm.Policy {
	sorted := slices.Clone(policies)
	slices.SortFunc(sorted, func(a, b rm.Policy) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		if p.Active() {
			return p
		}
	}
	if len(sorted) == 0 {
		return rm.Policy{}
	}
	return sorted[0]
}

// unavailable rewrites the wait of the waiting jobs while the target's
// source cannot reach GitHub: their list is as of its last word.
func unavailable(jobs []status.Job, err error, since time.Time) []status.Job {
	out := slices.Clone(jobs)
	for i := range out {
		if out[i].Waiting() && out[i].State != status.JobUnmatched {
			out[i].WaitReason = fmt.Sprintf("GitHub unavailable since %s: %v", since.Format(time.TimeOnly), err)
		}
	}
	return out
}
