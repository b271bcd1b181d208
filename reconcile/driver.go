package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/runner-manager/runner-manager/github"
)

// Result is what a pass asks of its driver.
type Result struct {
	// RequeueAfter is when the next pass should run, unless a nudge comes
	// first. Zero means "at once".
	RequeueAfter time.Duration
}

// githubError marks an error of a GitHub call. The pass has already
// stopped calling GitHub for a backoff (or until a rate limit's reset)
// and chosen its RequeueAfter accordingly, so the driver adds no backoff
// of its own.
type githubError struct{ err error }

func (e *githubError) Error() string { return e.err.Error() }
func (e *githubError) Unwrap() error { return e.err }

// driver runs passes: at once on a nudge, after RequeueAfter otherwise,
// with a capped, jittered exponential backoff while passes fail for other
// reasons (the journal), and until a rate limit's reset. It never runs two
// passes at once and is the only code that sleeps.
type driver struct {
	nudge  <-chan struct{}
	now    func() time.Time
	base   time.Duration
	max    time.Duration
	jitter func() float64 // in [0, 1)
	log    *slog.Logger
	// until, when set, ends the run after a pass for which it returns true.
	until func() bool
}

// run runs step until ctx ends (or until says so).
func (d *driver) run(ctx context.Context, step func(context.Context) (Result, error)) {
	if d.jitter == nil {
		d.jitter = rand.Float64
	}
	failures := 0
	lastErr := ""
	for {
		res, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		if d.until != nil && d.until() {
			return
		}
		wait := d.next(res, err, &failures)
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				d.log.Warn("reconcile pass failed", "err", msg, "retry_in", wait.Round(time.Millisecond))
				lastErr = msg
			} else {
				d.log.Debug("reconcile pass failed again", "err", msg, "retry_in", wait.Round(time.Millisecond))
			}
		} else if lastErr != "" {
			d.log.Info("reconcile pass recovered")
			lastErr = ""
		}
		if wait <= 0 {
			// Let a nudge that raced the pass coalesce with this rerun.
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

// next is how long to sleep after a pass.
func (d *driver) next(res Result, err error, failures *int) time.Duration {
	var rl *github.RateLimitError
	var ge *githubError
	switch {
	case err == nil:
		*failures = 0
		return res.RequeueAfter
	case errors.As(err, &rl):
		*failures = 0
		wait := rl.Reset.Sub(d.now())
		if res.RequeueAfter > 0 && res.RequeueAfter < wait {
			wait = res.RequeueAfter // local work (a conclusion) due first
		}
		return max(wait, 0)
	case errors.As(err, &ge) && res.RequeueAfter > 0:
		*failures = 0
		return res.RequeueAfter
	default:
		*failures++
		return backoff(*failures, d.base, d.max, d.jitter())
	}
}

// backoff is the n-th (from 1) wait of a capped exponential backoff with
// equal jitter: base·2^(n−1), capped at max, of which a random half.
func backoff(n int, base, max time.Duration, r float64) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + time.Duration(float64(d-half)*r)
}
