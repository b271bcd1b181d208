package reconcile

import (
	"context"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// applyEvents applies the job events GitHub sent since the last pass: the
// runner they name took a job (busy, with the job's identity).
func (p *pass) applyEvents(ctx context.Context) {
	l := p.l
	l.mu.Lock()
	events := l.events
	l.events = nil
	if l.demandKnown {
		p.demandAt = l.demand.At
	}
	l.mu.Unlock()
	var keep []rm.JobEvent
	for _, ev := range events {
		if (ev.Kind != rm.JobStarted && ev.Kind != rm.JobCompleted) || ev.RunnerName == "" {
			continue
		}
		it := p.byName[ev.RunnerName]
		if it == nil {
			p.nameJob(ctx, ev) // not this host's, or concluded already
			continue
		}
		if it.a.State == rm.StatePending || it.a.State == rm.StateRegistering {
			keep = append(keep, ev) // its launch is being recorded: next pass
			continue
		}
		if ev.Kind == rm.JobCompleted {
			l.tab.with(it.a.ID, func(r *runtime) {
				if !r.jobCompleted {
					r.jobCompleted, r.jobCompletedAt = true, p.now
				}
			})
			l.observeJobEnd(it.pol, ev)
		}
		a := it.a
		changed, named := false, false
		starting := a.State == rm.StateStarting
		if a.State == rm.StateStarting || a.State == rm.StateIdle {
			a, _ = a.MoveTo(rm.StateBusy, p.now)
			changed = true
		}
		if !a.Job.Known() && ev.JobID != "" {
			a.Job = eventJob(ev)
			changed, named = true, true
		}
		if changed && p.record(ctx, it, a) {
			it.log.Info("runner took a job", "job", a.Job.ID, "job_name", a.Job.Name, "event", string(ev.Kind))
			if starting && ev.Kind == rm.JobStarted {
				p.bootSeen(it, ev)
			}
			if split, ok := a.StartSplit(); named && ev.Kind == rm.JobStarted && ok {
				l.jobStarted(it.pol, split, p.now)
			}
		}
	}
	if len(keep) > 0 {
		l.mu.Lock()
		l.events = append(keep, l.events...)
		l.mu.Unlock()
	}
}

// nameJob takes GitHub's word on the job of an attempt this loop already
// concluded, when a later event names its runner: it names the job of one
// concluded from the runner's own trace, and corrects one concluded idle,
// lost or failed before GitHub's word came (lateOutcome), so no attempt
// any source says ran a job is left recorded otherwise.
func (p *pass) nameJob(ctx context.Context, ev rm.JobEvent) {
	l := p.l
	prefix := rm.RunnerNamePrefix(l.cfg.Host.ID)
	if !strings.HasPrefix(ev.RunnerName, prefix) {
		return
	}
	id, err := rm.ParseAttemptID(strings.TrimPrefix(ev.RunnerName, prefix))
	if err != nil {
		return
	}
	a, err := l.cfg.Store.Attempt(ctx, id)
	if err != nil || a.Live() || p.byPolicy[a.Policy] == nil {
		return
	}
	l.wordCame(ctx, id, ev.RunID)
	if ev.Kind == rm.JobCompleted {
		l.observeJobEnd(p.byPolicy[a.Policy], ev) // its runner exited before GitHub's word
	}
	was := a.Outcome
	o, correct := lateOutcome(a, ev)
	name := !a.Job.Known() && ev.JobID != "" && (correct || a.Outcome.Kind == rm.CompletedJob)
	if !correct && !name {
		return
	}
	if name {
		a.Job = eventJob(ev)
	}
	if correct {
		if a.BusyAt.IsZero() {
			a.BusyAt = a.EndedAt
		}
		a.State, a.Outcome = rm.StateFinished, o
	}
	a.UpdatedAt = l.cfg.Now()
	write := l.cfg.Store.RecordAttempt
	if correct && was.Kind == rm.Failed {
		write = l.cfg.Store.ForceAttempt // failed → finished: the table forbids it, the evidence says so
	}
	if err := write(ctx, a); err != nil {
		l.log.Warn("could not record GitHub's word on the job of an ended attempt", "attempt", id.String(), "job", ev.JobID, "err", err)
		return
	}
	if l.cfg.Meters != nil {
		// Again: the job's weight is recorded with its name (fleetweights).
		l.cfg.Meters.Ended(id, a.Outcome)
	}
	if correct {
		l.log.Info("ended attempt ran a job after all", "attempt", id.String(), "runner", ev.RunnerName, "job", ev.JobID,
			"was", was.String(), "outcome", o.String())
		return
	}
	l.log.Info("job named after its runner ended", "attempt", id.String(), "runner", ev.RunnerName, "job", ev.JobID, "job_name", ev.DisplayName)
}

// eventJob is the job a job event names: its id as GitHub's source gave it
// (a scale-set jobId, or a REST number in decimal) and the REST number when
// the event carries one.
func eventJob(ev rm.JobEvent) rm.Job {
	return rm.Job{ID: ev.JobID, Number: ev.JobNumber, RunID: ev.RunID, Workflow: ev.Workflow, Name: ev.DisplayName,
		QueuedAt: ev.QueuedAt, AssignedAt: ev.AssignedAt}
}
