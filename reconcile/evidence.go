package reconcile

import (
	"fmt"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// wordAfter reports whether the demand source has reported a figure taken
// after t: the job events that came with it were applied in this pass, so
// GitHub's word on a job that ran before t is in (a classic poll lists the
// jobs as they are at its time; a scale-set message is sent in order).
func (p *pass) wordAfter(t time.Time) bool {
	return !t.IsZero() && p.demandAt.After(t)
}

// lateOutcome is the outcome an ended attempt takes when GitHub's word that
// its runner ran a job comes after it was concluded without one (a demand
// source that was failing or silent past the job-word grace, a restart).
// No attempt any source says ran a job stays Lost or idle. A failure the
// runner caused during a job stays a failure unless GitHub says the job
// completed; a user's stop during a job stays Stopped.
func lateOutcome(a rm.Attempt, ev rm.JobEvent) (rm.Outcome, bool) {
	completed := ev.Kind == rm.JobCompleted
	clean := a.ExitCode == nil || *a.ExitCode == 0
	said := fmt.Sprintf("GitHub said after its conclusion (%s) that it ran a job", a.Outcome)
	if ev.JobID != "" {
		said = fmt.Sprintf("GitHub said after its conclusion (%s) that it ran job %s", a.Outcome, ev.JobID)
	}
	switch a.Outcome.Kind {
	case rm.ExitedIdleWithoutWork:
		if completed || clean {
			return rm.Outcome{Kind: rm.CompletedJob, Detail: said}, true
		}
	case rm.Failed:
		switch a.Outcome.Reason {
		case rm.Lost:
			return rm.Outcome{Kind: rm.CompletedJob, Detail: said}, true
		case rm.ProcessExitedUnexpectedly, rm.StartTimeout, rm.Zombie:
			if completed {
				return rm.Outcome{Kind: rm.CompletedJob, Detail: said}, true
			}
		}
	}
	return rm.Outcome{}, false
}

// unproven counts, per policy, the launches of the last minute that could
// still fail before a job: not concluded, never seen online, busy or with a
// job. The launch budget counts them with the failures, so launches whose
// failure is not concluded yet (a runner that needs seconds to exit 1)
// cannot take the cap past MaxFailedLaunchesPerMinute.
func (p *pass) unproven(window time.Time) map[rm.PolicyID]int {
	n := make(map[rm.PolicyID]int)
	for _, it := range p.items {
		a := it.a
		if it.concluded || a.CreatedAt.Before(window) || !a.BusyAt.IsZero() || a.Job.Known() {
			continue
		}
		switch a.State {
		case rm.StatePending, rm.StateRegistering, rm.StateStarting:
			n[a.Policy]++
		}
	}
	return n
}

// pauseLog remembers which policies have launches paused for failures, so
// the pause is logged when it starts and when it ends, not at every pass.
type pauseLog struct {
	mu sync.Mutex
	on map[rm.PolicyID]bool
}

// set records whether pol is paused and reports whether that changed.
func (pl *pauseLog) set(pol rm.PolicyID, paused bool) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.on == nil {
		pl.on = make(map[rm.PolicyID]bool)
	}
	if pl.on[pol] == paused {
		return false
	}
	if paused {
		pl.on[pol] = true
	} else {
		delete(pl.on, pol)
	}
	return true
}
