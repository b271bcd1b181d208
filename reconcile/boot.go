package reconcile

import (
	rm "github.com/runner-manager/runner-manager"
)

// A policy's measured boot (status.Policy.Boot, and the spares' sizing) is
// taken only from the runner's own act: a job it took while no poll had
// yet seen it listening. A poll that finds a runner online (its IdleAt)
// says only that it listened at some time before the poll, so with a
// runner lookup every RunnerListEvery (a minute) every such boot would
// read as about a minute: a figure of the poll, not of the runner. Those
// observations are left out; a policy none of whose runners took a job
// while starting keeps its boot unmeasured (the default estimate).

// bootSeen notes a boot of its runner from a job it took (ev, a
// JobStarted) while the loop still held it starting: launched at
// StartedAt, listening and taking the job by GitHub's handing it the
// job (RunnerAssignedAt, GitHub's clock, when it falls within the
// attempt's life as this host saw it; else now, the event's coming).
// The job must not have been queued after the launch, as GitHub tells:
// a runner that listened before its job came would read as booting
// until then.
func (p *pass) bootSeen(it *item, ev rm.JobEvent) {
	a := it.a
	if a.StartedAt.IsZero() {
		return
	}
	came := ev.AssignedAt
	if came.IsZero() {
		came = ev.QueuedAt
	}
	if !came.IsZero() && came.After(a.StartedAt) {
		return
	}
	took := p.now
	if t := ev.RunnerAssignedAt; !t.IsZero() && t.After(a.StartedAt) && !t.After(p.now) {
		took = t
	}
	p.l.spares.booted(it.pol.ID, took.Sub(a.StartedAt))
}
