package reconcile

import (
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// WaitStatus tells of the jobs of a policy's target that no runner serves
// yet, and why: what a person looks for when jobs queue. A target's
// policies share one loop, so they show the same figures.
type WaitStatus struct {
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

// waitStatus is the loop's WaitStatus after the pass: live is the count of
// runners holding a slot. It takes the loop's lock itself.
func (p *pass) waitStatus(live int) WaitStatus {
	l := p.l
	demand := l.demandNow()
	l.mu.Lock()
	queued := l.demand.Queued
	l.mu.Unlock()
	w := WaitStatus{Queued: queued, Waiting: queued + max(0, demand-live)}
	if w.Waiting == 0 {
		return w
	}
	w.WaitReason = p.waitReason(live)
	return w
}

// waitReason is the first of the reasons jobs wait that holds, the
// manager's own first, then admission's, then the policies' max.
func (p *pass) waitReason(live int) string {
	l := p.l
	if l.draining.Load() {
		return "the manager is stopping"
	}
	maxSum, active := 0, 0
	for _, pol := range p.policies {
		if pol.Active() {
			active++
			maxSum += pol.Max
		}
	}
	if active == 0 {
		return "paused"
	}
	if until, held := l.drv.held(p.now); held {
		return "GitHub calls held back until " + until.Format(time.TimeOnly)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pol := range p.policies {
		if r, ok := p.capRefused[pol.ID]; ok && pol.Active() {
			return r.String()
		}
	}
	if live >= maxSum {
		return fmt.Sprintf("at max %d", maxSum)
	}
	for _, pol := range p.policies {
		if n := p.notes[pol.ID]; n != "" && pol.Active() {
			return n
		}
	}
	return "runners starting"
}

// noteCapRefusal keeps the refusal that cut a policy's admitted capacity.
func (p *pass) noteCapRefusal(id rm.PolicyID, r Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.capRefused == nil {
		p.capRefused = make(map[rm.PolicyID]Refusal)
	}
	p.capRefused[id] = r
}
