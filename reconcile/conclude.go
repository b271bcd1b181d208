package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/store"
)

// concludeExited concludes every attempt whose process is gone, from its
// exit code and what GitHub said (outcomeFor).
func (p *pass) concludeExited(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if !it.exited || it.concluded {
			continue
		}
		var rt runtime
		l.tab.with(it.a.ID, func(r *runtime) {
			if r.exitSeenAt.IsZero() {
				r.exitSeenAt = p.now
			}
			rt = *r
		})
		code := -1
		if it.proc != nil && !rt.goneAtAdopt {
			code = it.proc.ExitCode()
		}
		_, listed := p.findRunner(it.a)
		ranJob := p.ranJob(it)
		f := exitFacts{
			job:          it.a.State == rm.StateBusy || it.a.Job.Known(),
			ranJob:       ranJob,
			jobCompleted: rt.jobCompleted,
			exitCode:     code,
			goneAtAdopt:  rt.goneAtAdopt,
			listed:       listed && l.listed,
			stop:         rt.stop,
			deregistered: rt.deregistered,
			removedIdle:  !rt.missingSince.IsZero() && !rt.deregistered,
			// GitHub's word is in once the demand source reported a figure
			// taken after the exit; JobWordGrace caps the wait for a silent
			// one. A drain concludes with what is known: it waits for jobs,
			// not for words about them; so does a one-shot pass, which
			// watches no demand (Config.once).
			waited: p.wordAfter(rt.exitSeenAt) || p.now.Sub(rt.exitSeenAt) >= l.cfg.JobWordGrace || l.draining.Load() || l.cfg.once,
		}
		if f.goneAtAdopt && !f.job && f.waited && (!l.listed || l.listAt.Before(rt.exitSeenAt)) {
			// Lost or not depends on GitHub's list, taken after the loss.
			p.deadline(p.now.Add(l.cfg.ActiveRequeue))
			continue
		}
		o, wait := outcomeFor(f)
		if !wait && o.Kind == rm.CompletedJob && !it.a.Job.Known() && !f.waited && !ranJob {
			// Seen busy, but which job? GitHub's word names it shortly.
			wait = true
		}
		if !wait && ranJob && !it.a.Job.Known() {
			// The runner's own trace says it ran a job: conclude now, and
			// let GitHub's word name the job later (applyEvents).
			if o.Detail == "" {
				o.Detail = "ran a job (its Worker log says so); GitHub had not named the job yet"
			}
			if it.a.State == rm.StateStarting || it.a.State == rm.StateIdle {
				it.a, _ = it.a.MoveTo(rm.StateBusy, rt.exitSeenAt)
			}
		}
		if wait {
			p.noteAttempt(ctx, it, "exited; waiting for GitHub's word on its job")
			p.deadline(rt.exitSeenAt.Add(l.cfg.JobWordGrace))
			continue
		}
		o = p.oomOutcome(it, o)
		remove := it.a.GitHubRunnerID != 0 && !rt.deregistered &&
			!(o.Kind == rm.CompletedJob && code == 0) && !(rt.goneAtAdopt && !listed)
		p.conclude(ctx, it, o, code, remove)
	}
}

// ranJob asks the attempt's launcher whether its runner ran a job (its own
// trace: a Worker log). Only a launched attempt's root can hold one, and
// only until Cleanup.
func (p *pass) ranJob(it *item) bool {
	return it.launched() && p.l.cfg.launcherFor(it.pol).RanJob(it.a.ID)
}

// launched says the attempt's runner was started: the journal has its
// process, or this manager holds it (a container whose runner ended
// before its launch returned has no pid to record).
func (it *item) launched() bool { return it.a.PID != 0 || it.proc != nil }

// conclude ends an attempt: exit code, usage, outcome in the journal; then
// its leftover registration and its root directory are removed.
func (p *pass) conclude(ctx context.Context, it *item, o rm.Outcome, code int, removeRegistration bool) {
	l := p.l
	a := it.a
	if code >= 0 {
		c := code
		a.ExitCode = &c
	}
	if l.cfg.Meters != nil {
		if u, ok := l.cfg.Meters.Peek(a.ID); ok {
			a.Usage = u
		}
	}
	githubRun := a.Job.RunID         // GitHub's word alone decides a slot's trust
	a.Job = p.withHookJob(it, a.Job) // before Cleanup removes the hook's record
	b, err := a.Conclude(o, p.now)
	if err != nil {
		it.log.Error("cannot conclude attempt", "outcome", o.String(), "err", err)
		return
	}
	b.UpdatedAt = p.now
	if err := l.cfg.Store.RecordAttempt(ctx, b); err != nil {
		if !errors.Is(err, store.ErrIllegalTransition) {
			it.log.Log(ctx, errLevel(err), "journal write failed", "outcome", o.String(), "err", err)
			p.addErr(fmt.Errorf("conclude attempt %s: %w", a.ID, err))
			return
		}
		// Recovery may force what the table forbids (a row left behind).
		if err := l.cfg.Store.ForceAttempt(ctx, b); err != nil {
			it.log.Log(ctx, errLevel(err), "journal write failed", "outcome", o.String(), "err", err)
			p.addErr(fmt.Errorf("conclude attempt %s: %w", a.ID, err))
			return
		}
	}
	it.a, it.concluded = b, true
	l.spares.concluded(b, o.Kind == rm.CompletedJob, p.now)
	if l.cfg.Meters != nil {
		l.cfg.Meters.Ended(a.ID, o)
	}
	if rt, _ := l.tab.get(a.ID); (o.Kind == rm.CompletedJob || !a.BusyAt.IsZero() || a.Job.Known()) && !rt.jobCompleted {
		// Its job may still count in the demand figure (see demandNow),
		// unless GitHub said it completed: that word came with a figure
		// that no longer counts it (a scale-set message's statistics, a
		// classic poll), usually before the runner's exit.
		ended := rt.exitSeenAt
		if ended.IsZero() {
			ended = p.now
		}
		l.jobEnded(ended, a.Job.ID, a.RunnerName)
	}
	l.tab.forget(a.ID)
	delete(l.watched, a.ID)
	p.logConclusion(it, a, o, code)
	// A root is kept for debugging only when the runner failed: not after
	// a stop during a job, which is the manager's or a user's doing.
	id, runnerID, failed := a.ID, a.GitHubRunnerID, o.Kind == rm.Failed && o.Reason != rm.Stopped
	launcher := l.cfg.launcherFor(it.pol)
	launched := o.Reason != rm.RegistrationFailed // else no directory was made
	// A warm attempt's root goes now, not after the pass's launches: its
	// slot is given back after its Cleanup, and the repository's next job,
	// often launched in this very pass, finds it warm instead of making a
	// cold one. Its runner exited: Cleanup is the local files' work.
	cleaned := false
	if b.Slot != "" {
		if launched {
			if err := launcher.Cleanup(id, failed); err != nil {
				it.log.Warn("could not clean the attempt's directory", "err", err)
			}
			cleaned = true
		}
		// Launched or not (a crash between the lease and the launch): the
		// slot goes back, once GitHub has said which run its job was.
		l.releaseSlotOnWord(ctx, it.pol, b, githubRun, it.log)
	}
	p.afterScale(func(ctx context.Context) {
		if removeRegistration && !p.isQuiet() {
			switch err := l.cfg.Target.Registrar.RemoveRunner(ctx, runnerID); {
			case errors.Is(err, rm.ErrRunnerBusy):
				// Its runner is gone, but GitHub still counts it busy:
				// asked again until GitHub lets it go (removals.go).
				l.held.hold(runnerID, a.RunnerName, p.now)
				it.log.Info("GitHub holds the ended runner's registration as busy; asking again every " + removalRetryEvery.String())
			case err != nil:
				it.log.Warn("could not remove the runner's registration; it will be reaped later", "err", err)
				p.githubErr(err, "remove runner")
			}
		}
		if launched && !cleaned {
			if err := launcher.Cleanup(id, failed); err != nil {
				it.log.Warn("could not clean the attempt's directory", "err", err)
			}
		}
	})
}

// repairUnfinishedLaunches concludes pending and registering attempts no
// launch of this process is working on: the manager stopped in the middle
// of one (journal first means such a row is all a crash leaves).
func (p *pass) repairUnfinishedLaunches(ctx context.Context) {
	l := p.l
	for _, it := range p.items {
		if it.concluded || (it.a.State != rm.StatePending && it.a.State != rm.StateRegistering) {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.inflight {
			continue
		}
		if rt.proc != nil {
			// Launched, but the journal write of its start failed: write it.
			a := it.a
			a.PID, a.ProcessStart = rt.proc.PID(), rt.proc.Start()
			if a.State == rm.StatePending {
				a, _ = a.MoveTo(rm.StateRegistering, p.now)
			}
			a, _ = a.MoveTo(rm.StateStarting, p.now)
			p.record(ctx, it, a)
			it.proc = rt.proc
			l.watchProcess(a.ID, rt.proc)
			continue
		}
		if it.a.GitHubRunnerID == 0 && it.a.State == rm.StateRegistering {
			// The JIT request may have answered before the crash: a
			// registration of this name is the attempt's.
			if p.isQuiet() {
				continue // GitHub is asked once it answers again
			}
			id, ok := p.leftoverRegistration(ctx, it)
			if !ok {
				continue
			}
			it.a.GitHubRunnerID = id
		}
		if it.a.GitHubRunnerID == 0 {
			p.conclude(ctx, it, rm.FailedWith(rm.RegistrationFailed, "the manager stopped before the runner was registered"), -1, false)
		} else {
			p.conclude(ctx, it, rm.FailedWith(rm.LaunchFailed, "the manager stopped between the runner's registration and its launch"), -1, true)
		}
	}
}

// logConclusion says how an attempt ended, at the level its outcome asks.
func (p *pass) logConclusion(it *item, a rm.Attempt, o rm.Outcome, code int) {
	args := []any{"outcome", o.String(), "life", p.now.Sub(a.CreatedAt).Round(time.Millisecond)}
	if a.ExitCode != nil {
		args = append(args, "exit_code", *a.ExitCode)
	}
	if a.Job.Known() {
		args = append(args, "job", a.Job.ID)
	}
	if a.Usage.Samples > 0 {
		args = append(args, "peak_rss", bytesize.Format(a.Usage.PeakRSSBytes), "cpu_avg_millicores", a.Usage.CPUAvgMillicores)
	}
	switch {
	case code == 7:
		it.log.Error("runner version deprecated: install a newer runner (runner-manager runner install)", args...)
	case o.Kind == rm.Failed:
		it.log.Warn("attempt failed", args...)
	default:
		it.log.Info("attempt ended", args...)
	}
}
