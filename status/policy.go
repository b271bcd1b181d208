package status

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Policy is one policy's figures.
type Policy struct {
	ID     rm.PolicyID `json:"id"`
	Name   string      `json:"name"`
	Target string      `json:"target"`
	Mode   string      `json:"mode"`
	Paused bool        `json:"paused"`
	// Monitor: the policy watches its target's demand and starts no
	// runner (rm.Policy.Monitor).
	Monitor bool `json:"monitor,omitempty"`
	Live    int  `json:"live"`
	Idle    int  `json:"idle"`
	Busy    int  `json:"busy"`
	MinIdle int  `json:"min_idle"`
	Max     int  `json:"max"`
	// Demand is what GitHub last said the target wants.
	Demand int `json:"demand"`
	// Admitted is the capacity admission allows now (≤ Max): what
	// scale-set mode reports as maxCapacity.
	Admitted int `json:"admitted"`
	// ExpectedPeakBytes is what admission expects a new attempt to peak at.
	ExpectedPeakBytes uint64 `json:"expected_peak_bytes"`
	LastRefusal       string `json:"last_refusal"`
	LastError         string `json:"last_error"`
	// Wait: the jobs that wait, and why.
	Wait

	// Spares are the warm spares live now (idle runners beyond the jobs),
	// SpareTarget how many the loop keeps, Boot the measured boot of the
	// policy's runners (launch → taking a waiting job, from the runner's
	// own act, never a poll's sighting: reconcile/boot.go; 0 until
	// measured).
	Spares      int `json:"spares"`
	SpareTarget int `json:"spare_target"`
	// SpareCap is the most spares the policy keeps (rm.Policy.Spares),
	// SpareAuto whether they are sized by the day; SpareNote says why the
	// spares live are below the target ("spares: the host keeps 8 warm
	// spares at most …", "memory: …"), "" when they are not.
	SpareCap  int           `json:"spare_cap"`
	SpareAuto bool          `json:"spare_auto"`
	SpareNote string        `json:"spare_note"`
	Boot      time.Duration `json:"boot_ns"`
	// JobStart is how fast its jobs started in the last hour.
	JobStart JobStart `json:"job_start"`
	// Fleet: the policy is the fleet's (rm.Policy.Fleet), served by every
	// host sharing the store; FleetSet is its scale set across the fleet
	// (Status.WithFleetSets), nil when the store did not tell.
	Fleet    bool      `json:"fleet"`
	FleetSet *FleetSet `json:"fleet_set"`
}

// PolicyOf is a policy's figures as its settings give them, before any
// pass: no live attempts, demand or admission yet.
func PolicyOf(p rm.Policy) Policy {
	return Policy{
		ID: p.ID, Name: p.Name, Target: p.Target.String(), Mode: p.Target.Mode().String(),
		Paused: p.Paused, Monitor: p.Monitor, MinIdle: p.MinIdle, Max: p.Max, SpareCap: p.Spares(), SpareAuto: p.SparesAuto() && p.Spares() > 0,
		Fleet: p.Fleet,
	}
}

// Wait tells of the jobs of a policy's target that no runner serves yet,
// and why: what a person looks for when jobs queue. A target's policies
// share one loop, so they show the same figures.
type Wait struct {
	// Queued is how many jobs GitHub holds for the target without
	// assigning them, because the capacity told to it is taken (scale-set
	// mode; classic mode counts them in Demand).
	Queued int `json:"queued"`
	// Waiting is how many of the target's jobs no live runner serves:
	// Queued plus the demand beyond the live runners.
	Waiting int `json:"waiting"`
	// WaitReason says why they wait ("memory: …", "at max 4", "paused",
	// "runners starting"); empty while nothing waits.
	WaitReason string `json:"wait_reason"`
}

// JobStart is how fast a policy's jobs started in the last hour: each
// job's wait from GitHub's queue until its runner took it, and the
// manager's part of it (rm.StartSplit.Ready: launch and boot), as medians
// and 95th percentiles.
type JobStart struct {
	// Jobs is how many jobs started on the policy's runners in the last
	// hour with their queue time told.
	Jobs    int           `json:"jobs"`
	P50     time.Duration `json:"p50_ns"`
	P95     time.Duration `json:"p95_ns"`
	OursP50 time.Duration `json:"ours_p50_ns"`
	OursP95 time.Duration `json:"ours_p95_ns"`
}
