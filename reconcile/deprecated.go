package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// ExitVersionDeprecated is the listener's exit code for a runner version
// GitHub no longer accepts (with
// ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1, which the launchers
// set).
const ExitVersionDeprecated = 7

// deprecations remembers, per policy, when its runner last exited 7: the
// policy launches nothing more until a runner newer than that is there
// (installed after it, or the policy changed after it), instead of failing
// launch after launch with the same runner.
type deprecations struct {
	mu    sync.Mutex
	since map[rm.PolicyID]time.Time
}

// saw notes the failed attempts of a policy a pass read; it returns when
// the policy's runner last exited 7 (zero: never, as far as it knows).
func (d *deprecations) saw(pol rm.PolicyID, failed []rm.Attempt) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.since == nil {
		d.since = make(map[rm.PolicyID]time.Time)
	}
	t := d.since[pol]
	for _, a := range failed {
		if a.ExitCode != nil && *a.ExitCode == ExitVersionDeprecated && a.EndedAt.After(t) {
			t = a.EndedAt
		}
	}
	if !t.IsZero() {
		d.since[pol] = t
	}
	return t
}

func (d *deprecations) forget(pol rm.PolicyID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.since, pol)
}

// deprecatedHold reports whether pol's launches are held because its
// runner exited 7 at since and nothing newer is there yet, with the
// policy's note naming the fix (Installs.DeprecatedFix), and how many
// launches it may still make (1: the one that proves a newer runner on
// trial).
func (p *pass) deprecatedHold(pol *rm.Policy, since time.Time) (string, int, bool) {
	if since.IsZero() {
		return "", 0, false
	}
	installs := p.l.cfg.Installs
	if pol.UpdatedAt.After(since) || installs != nil && installs.InstalledAt(*pol).After(since) {
		p.l.deprecated.forget(pol.ID)
		if p.l.deprecatedLog.set(pol.ID, false) {
			p.l.log.Info("a newer runner is there: launches resume", "policy", pol.Name)
		}
		return "", 0, false
	}
	at := since.Local().Format(time.TimeOnly)
	if installs != nil && installs.Launches(*pol) {
		if t, ok := installs.Trial(); ok {
			// A newer runner is on trial: one attempt proves it (runnerDir),
			// the others wait for its word.
			if t.Attempt.IsZero() {
				return fmt.Sprintf("runner version deprecated (exit code 7 at %s): the next attempt proves runner %s", at, t.Version), 1, true
			}
			return fmt.Sprintf("runner version deprecated (exit code 7 at %s): proving runner %s on attempt %s; launches resume once it listens", at, t.Version, t.Attempt), 0, true
		}
	}
	fix := "give the policy a runner GitHub accepts; launches resume once the policy changes"
	if installs != nil {
		fix = installs.DeprecatedFix(*pol)
	}
	note := fmt.Sprintf("runner version deprecated (exit code 7 at %s): %s", at, fix)
	if p.l.deprecatedLog.set(pol.ID, true) {
		p.l.log.Warn("launches paused: GitHub no longer accepts this runner version", "policy", pol.Name, "fix", fix)
	}
	return note, 0, true
}

// trialRunner is the runner a launch of pol's attempt a starts from when
// a newer runner is on trial and no attempt proves it yet: a claims it
// (Installs.Claim) and is its proof; "" otherwise.
func (l *Loop) trialRunner(pol rm.Policy, a rm.AttemptID) string {
	if l.cfg.Installs == nil || !l.cfg.Installs.Launches(pol) {
		return ""
	}
	t, ok := l.cfg.Installs.Trial()
	if !ok || !t.Attempt.IsZero() || !l.cfg.Installs.Claim(t.Dir, a) {
		return ""
	}
	l.log.Info("proving a newer runner on one attempt: every policy launches it once it listens", "version", t.Version, "attempt", a.String(), "policy", pol.Name)
	return t.Dir
}

// proveRunner judges the runner on trial by the attempt proving it: a
// runner that listened (online) or ran a job is promoted, and every policy
// launches it from then on; one whose attempt ended before that is marked
// bad, and the previous runner serves on. Nothing to do without a trial.
func (p *pass) proveRunner(ctx context.Context) {
	l := p.l
	if l.cfg.Installs == nil {
		return
	}
	t, ok := l.cfg.Installs.Trial()
	if !ok || t.Attempt.IsZero() {
		return
	}
	var a rm.Attempt
	found := false
	for _, it := range p.items {
		if it.a.ID == t.Attempt {
			a, found = it.a, true
			break
		}
	}
	if !found {
		var err error
		if a, err = l.cfg.Store.Attempt(ctx, t.Attempt); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				_, _ = l.cfg.Installs.MarkBad(t.Version, "its proof attempt "+t.Attempt.String()+" is not in the journal")
			}
			return
		}
	}
	switch {
	case !a.IdleAt.IsZero() || !a.BusyAt.IsZero() || a.Outcome.Kind == rm.CompletedJob:
		if err := l.cfg.Installs.Promote(t.Dir); err != nil {
			p.addErr(err)
			return
		}
		l.log.Info("the newer runner is proven: every policy launches it now", "version", t.Version, "attempt", a.ID.String())
	case !a.Live():
		why := a.Outcome.String()
		if a.ExitCode != nil && *a.ExitCode == ExitVersionDeprecated {
			why = "GitHub refuses it too (exit code 7)"
		}
		b, err := l.cfg.Installs.MarkBad(t.Version, "its proof attempt "+a.ID.String()+" ended before it listened: "+why)
		if err != nil {
			p.addErr(err)
			return
		}
		l.log.Warn("runner update failed its proof: the previous runner serves on", "version", t.Version, "attempt", a.ID.String(), "why", why, "retry_after", b.RetryAt.Sub(b.At))
	}
}
