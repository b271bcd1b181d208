package reconcile

import (
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// waitStatus is the loop's status.Wait after the pass: live is the count of
// runners holding a slot. It takes the loop's lock itself.
func (p *pass) waitStatus(live int) status.Wait {
	l := p.l
	demand := l.demandNow()
	l.mu.Lock()
	queued := l.demand.Queued
	l.mu.Unlock()
	w := status.Wait{Queued: queued, Waiting: queued + max(0, demand-live)}
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
		for _, pol := range p.policies {
			if pol.Watched() {
				return "monitor only: this host starts no runner for it"
			}
		}
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
