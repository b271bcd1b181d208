package reconcile

import (
	"context"
	"errors"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// reapRunners stops runners the manager must stop: asked by a user, not
// online past StartTimeout, idle past IdleTimeout, hung after their job
// (alive HungGrace after GitHub said the job completed), or zombies
// (alive, not running a job, and their registration said gone by two
// lookups at least ZombieGrace apart).
func (p *pass) reapRunners(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if !it.holdsSlot() || it.proc == nil {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.stopping {
			continue
		}
		a := it.a
		switch {
		case rt.stop == stopUser:
			p.deregister(ctx, it, true)
			p.stop(ctx, it, stopUser)
		case a.State == rm.StateStarting && !p.now.Before(a.StartedAt.Add(l.cfg.StartTimeout)):
			if p.deregister(ctx, it, false) {
				p.stop(ctx, it, stopStartTimeout)
			}
		case a.State == rm.StateIdle && l.cfg.IdleTimeout > 0 && !p.now.Before(a.IdleAt.Add(l.cfg.IdleTimeout)):
			if p.deregister(ctx, it, false) {
				p.stop(ctx, it, stopIdleTimeout)
			}
		case p.hung(rt):
			p.stopHung(ctx, it, rt)
		case p.zombie(it, rt):
			it.log.Warn("runner is a zombie: alive, no job, and GitHub has had no registration for it since",
				"missing_since", rt.missingSince.Format(time.RFC3339))
			p.stop(ctx, it, stopZombie)
		default:
			if a.State == rm.StateStarting {
				p.deadline(a.StartedAt.Add(l.cfg.StartTimeout))
			}
			if a.State == rm.StateIdle && l.cfg.IdleTimeout > 0 {
				p.deadline(a.IdleAt.Add(l.cfg.IdleTimeout))
			}
			if !rt.missingSince.IsZero() && !p.running(it) {
				p.deadline(rt.missingSince.Add(l.cfg.ZombieGrace))
			}
			if rt.jobCompleted && !rt.jobCompletedAt.IsZero() {
				p.deadline(rt.jobCompletedAt.Add(l.cfg.HungGrace))
			}
		}
	}
}

// stop stops an attempt's runner in the background, noting why on it.
func (p *pass) stop(ctx context.Context, it *item, why stopReason) {
	p.noteAttempt(ctx, it, "stopping: "+string(why))
	p.l.stopProcess(it.log, it.a.ID, it.proc, why)
}

// deregister removes an attempt's registration before its runner is
// stopped. It reports whether the runner may be stopped: not when GitHub
// says it is busy (unless force), nor while GitHub calls are held back.
func (p *pass) deregister(ctx context.Context, it *item, force bool) bool {
	l := p.l
	if it.a.GitHubRunnerID == 0 {
		return true
	}
	if p.isQuiet() {
		return force
	}
	err := l.cfg.Target.Registrar.RemoveRunner(ctx, it.a.GitHubRunnerID)
	switch {
	case err == nil:
		p.githubOK()
		l.tab.with(it.a.ID, func(r *runtime) { r.deregistered = true })
		return true
	case errors.Is(err, rm.ErrRunnerBusy):
		l.tab.with(it.a.ID, func(r *runtime) { r.refusedBusy = true })
		it.log.Info("GitHub says the runner is busy; left running")
		p.noteAttempt(ctx, it, "GitHub says it is busy: left running")
		return force
	default:
		p.githubErr(err, "remove runner")
		return force
	}
}

// reapRegistrations removes this host's registrations at the target that
// no live attempt owns (a crash between registration and the journal, a
// removal that failed), unless busy. Only on a list taken in this pass.
func (p *pass) reapRegistrations(ctx context.Context) {
	l := p.l
	if !p.fresh {
		return
	}
	prefix := rm.RunnerNamePrefix(l.cfg.Host.ID)
	for _, r := range l.runners {
		if p.isQuiet() {
			return
		}
		if _, ours := p.byName[r.Name]; ours || !strings.HasPrefix(r.Name, prefix) {
			continue
		}
		if id, err := rm.ParseAttemptID(strings.TrimPrefix(r.Name, prefix)); err == nil && p.liveElsewhere(ctx, id) {
			continue
		}
		if r.Busy {
			l.log.Debug("leftover registration is busy; left alone", "runner", r.Name)
			continue
		}
		err := l.cfg.Target.Registrar.RemoveRunner(ctx, r.ID)
		switch {
		case err == nil:
			p.githubOK()
			l.log.Info("removed a registration no live attempt owns", "runner", r.Name, "runner_id", r.ID)
		case errors.Is(err, rm.ErrRunnerBusy):
			l.log.Debug("leftover registration is busy; left alone", "runner", r.Name)
		default:
			l.log.Warn("could not remove a leftover registration", "runner", r.Name, "err", err)
			p.githubErr(err, "remove leftover runner")
		}
	}
}

// liveElsewhere reports whether a listed registration's attempt is live
// outside this pass's items: launched by another loop of this host (the
// runner list of a scope holds every target's registrations of the host,
// each scale set's or label set's), or in flight. The journal answers for
// attempts this process does not know yet (another loop's first pass after
// a restart); when it cannot be read, the registration is left alone. So
// is the registration of an attempt that ended after the list was sent (a
// list another loop had sent, rm.SharedRunnerLister): the list is older than
// its conclusion, which dealt with its registration (removed it, asks
// again while GitHub holds it busy, or left it to GitHub, which deletes an
// ephemeral runner's after its job); a list sent after the end tells
// whether one is left.
func (p *pass) liveElsewhere(ctx context.Context, id rm.AttemptID) bool {
	if _, known := p.l.tab.get(id); known {
		return true
	}
	a, err := p.l.cfg.Store.Attempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	return err != nil || a.Live() || a.EndedAt.After(p.l.listAt)
}
