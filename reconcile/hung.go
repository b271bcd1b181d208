package reconcile

import (
	"context"
	"time"
)

// A runner hung after its job is a live runner process whose job GitHub
// said completed (a scale-set JobCompleted message, a classic job's
// status completed) HungGrace ago or more. An ephemeral runner exits
// within seconds of its job's end; the ones reported to live on hold
// their slot for hours (actions/runner #4703: a listener whose next
// request after taking a job never returns, the job failed by GitHub
// after ten minutes; #4418: a Worker that never exits after its
// completion call failed; actions/actions-runner-controller #4603: ARC's
// JobCompleted handler leaves such a runner running). Like a zombie it is
// judged level-based, from the runtime table at each pass: no timer.

// hung reports whether the attempt's runner is hung after its job: GitHub
// said its job completed at least HungGrace ago and it still runs. The
// caller has checked that the attempt holds its slot with a process.
func (p *pass) hung(rt runtime) bool {
	return rt.jobCompleted && !rt.jobCompletedAt.IsZero() && !p.now.Before(rt.jobCompletedAt.Add(p.l.cfg.HungGrace))
}

// stopHung deregisters a hung runner (forced: GitHub said its job is
// over, so a busy refusal does not keep it) and stops its process tree.
// Its conclusion is CompletedJob: it ran its job, whose weight counts.
func (p *pass) stopHung(ctx context.Context, it *item, rt runtime) {
	it.log.Warn("runner hung after its job ended: GitHub said the job completed, the process lives on; stopping it",
		"job_completed_at", rt.jobCompletedAt.Format(time.RFC3339), "hung_grace", p.l.cfg.HungGrace)
	p.deregister(ctx, it, true)
	p.stop(ctx, it, stopHung)
}
