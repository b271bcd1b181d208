package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
)

// Result is what a pass (or a demand watch) tells its driver; Reconcile
// returns it with the driver's verdict in RequeueAfter.
type Result struct {
	// RequeueAfter is when the next pass is due for the pass's own
	// reasons: its cadence while GitHub answers, never later than its
	// earliest deadline (a start timeout, the end of a job-word grace, a
	// scale-down delay). While GitHub calls are held back it names the
	// earliest deadline only, zero when there is none: the driver wakes at
	// the end of the hold or at that deadline, whichever comes first. From
	// Reconcile, it is when the next pass should run.
	RequeueAfter time.Duration
	// GitHubAnswered: a GitHub call of the step succeeded, so the backoff
	// of GitHub's failures starts over.
	GitHubAnswered bool
}

// githubError classes an error as GitHub's (5xx, network, a rate limit,
// refused credentials): the driver holds GitHub calls back instead of
// backing off the pass as for the journal's failures. The pass makes no
// GitHub call while they are held back; its work that needs none (a
// runner's exit concluded, its slot refilled once GitHub answers) goes on.
type githubError struct{ err error }

func (e *githubError) Error() string { return e.err.Error() }
func (e *githubError) Unwrap() error { return e.err }

// driver runs a step (a loop's reconcile pass, its demand watch) again and
// again: at once on a nudge, after the step's RequeueAfter otherwise. It
// never runs two steps at once, is the only code that sleeps, and is the
// one owner of backoff:
//   - while steps fail for other reasons (the journal), a capped, jittered
//     exponential backoff from base to max;
//   - while GitHub fails, it holds GitHub calls back (held): for the same
//     backoff capped at ghMax, or until a rate limit's reset. A step in
//     which GitHub answered starts that backoff over, and so does recovered
//     (the demand watch reporting again).
type driver struct {
	// name is what its log lines call a step.
	name  string
	nudge <-chan struct{}
	now   func() time.Time
	base  time.Duration
	max   time.Duration
	// ghMax caps the backoff of GitHub's failures (default: max, at most
	// rm.MaxOutageWait, so GitHub's return is seen within seconds).
	ghMax  time.Duration
	jitter func() float64 // in [0, 1)
	log    *slog.Logger

	mu sync.Mutex // guards the fields below
	// failures: steps that failed in a row for other reasons than GitHub.
	failures int
	// ghFailures: steps in a row in which GitHub failed.
	ghFailures int
	// holdUntil: no GitHub call before then.
	holdUntil time.Time
	// holdLimit: holdUntil is a rate limit's reset, which only time ends.
	holdLimit bool
}

// run runs step until ctx ends, or until says so after a step (nil:
// never).
func (d *driver) run(ctx context.Context, step func(context.Context) (Result, error), until func() bool) {
	lastErr := ""
	for {
		res, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := d.settle(res, err)
		if until != nil && until() {
			return
		}
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				d.log.Warn(d.name+" failed", "err", msg, "retry_in", wait.Round(time.Millisecond))
				lastErr = msg
			} else {
				d.log.Debug(d.name+" failed again", "err", msg, "retry_in", wait.Round(time.Millisecond))
			}
		} else if lastErr != "" {
			d.log.Info(d.name + " recovered")
			lastErr = ""
		}
		if wait <= 0 {
			// Let a nudge that raced the step coalesce with this rerun.
			select {
			case <-d.nudge:
			default:
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.nudge:
			t.Stop()
		case <-t.C:
		}
	}
}

// settle takes a step's result and returns how long to wait before the
// next: the step's RequeueAfter, a backoff while it fails, cut short by
// its deadline while GitHub calls are held back.
func (d *driver) settle(res Result, err error) time.Duration {
	now := d.now()
	limited, unavailable, other := classify(err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if res.GitHubAnswered {
		d.ghFailures = 0
	}
	for _, reset := range limited {
		if reset.After(d.holdUntil) {
			d.holdUntil, d.holdLimit = reset, true
		}
	}
	if unavailable {
		d.ghFailures++
		until := now.Add(backoff.Policy{Base: d.base, Cap: d.githubMax()}.At(d.ghFailures-1, d.random()))
		if until.After(d.holdUntil) {
			d.holdUntil, d.holdLimit = until, false
		}
	}
	if other {
		d.failures++
		return backoff.Policy{Base: d.base, Cap: d.max}.At(d.failures-1, d.random())
	}
	d.failures = 0
	if now.Before(d.holdUntil) {
		wait := d.holdUntil.Sub(now)
		if res.RequeueAfter > 0 && res.RequeueAfter < wait {
			wait = res.RequeueAfter // local work due first
		}
		return wait
	}
	if len(limited) > 0 || unavailable {
		// GitHub failed, and its hold is already over (a reset in the
		// past): no hot loop.
		return max(res.RequeueAfter, minRequeue)
	}
	return res.RequeueAfter
}

// classify splits a step's error: the resets of the rate limits GitHub
// answered, whether GitHub failed otherwise, and whether anything else
// failed (the journal).
func classify(err error) (limited []time.Time, unavailable, other bool) {
	if err == nil {
		return nil, false, false
	}
	var parts []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	for _, part := range parts {
		gh, ok := part.(*githubError)
		if !ok {
			other = true
			continue
		}
		calls := []error{gh.err}
		if j, ok := gh.err.(interface{ Unwrap() []error }); ok {
			calls = j.Unwrap()
		}
		for _, c := range calls {
			var rl *rm.RateLimitError
			if errors.As(c, &rl) {
				limited = append(limited, rl.Reset)
			} else {
				unavailable = true
			}
		}
	}
	return limited, unavailable, other
}

func (d *driver) githubMax() time.Duration {
	if d.ghMax > 0 {
		return d.ghMax
	}
	return min(d.max, rm.MaxOutageWait)
}

func (d *driver) random() float64 {
	if d.jitter == nil {
		return rand.Float64()
	}
	return d.jitter()
}

// held reports whether GitHub calls are held back at now, and until when.
func (d *driver) held(now time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holdUntil, now.Before(d.holdUntil)
}

// recovered notes that GitHub answers again (the demand watch reported
// after failing): the backoff starts over and its hold ends now; a rate
// limit's does not.
func (d *driver) recovered(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ghFailures = 0
	if !d.holdLimit && now.Before(d.holdUntil) {
		d.holdUntil = now
	}
}

// githubFailures is how many steps in a row GitHub failed in.
func (d *driver) githubFailures() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ghFailures
}
