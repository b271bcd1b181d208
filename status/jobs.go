package status

import (
	"cmp"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// The states of a job in the jobs view (Job.State).
const (
	// JobQueued: GitHub holds it for the target without assigning it
	// (offered, or queued beyond the capacity told; classic mode: queued).
	JobQueued = "queued"
	// JobAssignedToTarget: GitHub assigned it to the target's scale set; a
	// runner of the target will take it.
	JobAssignedToTarget = "assigned"
	// JobRunning: a runner of this host runs it.
	JobRunning = "running"
	// JobUnmatched: it asks for a self-hosted runner and no policy of this
	// host matches its labels (classic mode).
	JobUnmatched = "unmatched"
)

// Job is one job the host knows of, waiting for a runner or running on
// one: what a person looks for when jobs queue (`runner-manager jobs`).
type Job struct {
	// ID is the job's id as its source gave it (rm.Job.ID).
	ID string `json:"id"`
	// Number is the REST job number, 0 when not known (scale-set mode).
	Number     int64    `json:"number"`
	RunID      int64    `json:"run_id"`
	Repository string   `json:"repository"`
	Workflow   string   `json:"workflow"`
	Name       string   `json:"name"`
	Labels     []string `json:"labels"`
	// State is JobQueued, JobAssignedToTarget, JobRunning or JobUnmatched.
	State string `json:"state"`
	// Policy is the policy that serves it (running) or would (waiting);
	// zero for an unmatched job.
	Policy     rm.PolicyID `json:"policy"`
	PolicyName string      `json:"policy_name"`
	// QueuedAt is when GitHub queued it (else when first seen; zero when
	// nobody said).
	QueuedAt time.Time `json:"queued_at"`
	// StartedAt, Attempt and RunnerName are of a running job.
	StartedAt  time.Time    `json:"started_at"`
	Attempt    rm.AttemptID `json:"attempt"`
	RunnerName string       `json:"runner_name"`
	// WaitReason says why a waiting job waits ("at max 2", "memory: …",
	// "runner starting", "GitHub unavailable: …"); "" for a running job.
	WaitReason string `json:"wait_reason"`
	// Host and HostName are the host a fleet policy's waiting job was
	// placed on, PlacedWhy why there (store.FleetPlacement); zero and ""
	// for other jobs.
	Host      rm.HostID `json:"host"`
	HostName  string    `json:"host_name"`
	PlacedWhy string    `json:"placed_why"`
}

// Waiting reports whether the job waits for a runner.
func (j Job) Waiting() bool { return j.State != JobRunning }

// WaitWhy is why a waiting job waits, for people, and for a fleet
// policy's job the host it was placed on and why there: "on beta (least
// loaded): runner starting".
func (j Job) WaitWhy() string {
	if j.HostName == "" {
		return j.WaitReason
	}
	on := "on " + j.HostName
	if j.PlacedWhy != "" {
		on += " (" + j.PlacedWhy + ")"
	}
	if j.WaitReason == "" {
		return on
	}
	return on + ": " + j.WaitReason
}

// SortJobs orders a jobs view: running jobs first, then the waiting, each
// oldest first (ties by id).
func SortJobs(jobs []Job) {
	slices.SortStableFunc(jobs, func(a, b Job) int {
		if a.Waiting() != b.Waiting() {
			if a.Waiting() {
				return 1
			}
			return -1
		}
		ta, tb := a.QueuedAt, b.QueuedAt
		if !a.Waiting() {
			ta, tb = a.StartedAt, b.StartedAt
		}
		return cmp.Or(ta.Compare(tb), cmp.Compare(a.ID, b.ID))
	})
}

// TargetWaits is how many of a target's jobs wait for a runner, and how
// many of them the jobs view names one by one: GitHub counts jobs it holds
// beyond a scale set's capacity without always naming them (on github.com
// it assigns directly and sends no offer for them).
type TargetWaits struct {
	Target string `json:"target"`
	// Policy is the policy the target's waiting jobs go to.
	Policy  string `json:"policy"`
	Waiting int    `json:"waiting"`
	Named   int    `json:"named"`
}

// Waits is each target's waiting jobs, counted and named, in the order of
// the status's policies; targets with nothing waiting are left out. A
// target's policies share one loop and show the same counts: each target
// is counted once.
func (s Status) Waits() []TargetWaits {
	named := map[string]int{}
	targetOf := map[rm.PolicyID]string{}
	for _, p := range s.Policies {
		targetOf[p.ID] = p.Target
	}
	for _, j := range s.Jobs {
		if j.Waiting() && j.State != JobUnmatched {
			named[targetOf[j.Policy]]++
		}
	}
	var out []TargetWaits
	index := map[string]int{}
	for _, p := range s.Policies {
		i, seen := index[p.Target]
		if !seen {
			i = len(out)
			index[p.Target] = i
			out = append(out, TargetWaits{Target: p.Target, Policy: p.Name, Named: named[p.Target]})
		}
		out[i].Waiting = max(out[i].Waiting, p.Waiting, out[i].Named)
	}
	return slices.DeleteFunc(out, func(w TargetWaits) bool { return w.Waiting == 0 })
}

// WaitingJobs is how many jobs wait for a runner here: those GitHub counts
// for each target (Waits), and those no policy here matches.
func (s Status) WaitingJobs() int {
	n := 0
	for _, w := range s.Waits() {
		n += w.Waiting
	}
	for _, j := range s.Jobs {
		if j.State == JobUnmatched {
			n++
		}
	}
	return n
}
