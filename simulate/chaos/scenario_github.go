package chaos

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// stormDrive answers 500 on every route of the fake for d, once jobs run.
func stormDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.logf("storm: 500 on every route for %s", d)
		w.Fake.Fault(fakegithub.FaultAll, fakegithub.Fault{Status: http.StatusInternalServerError})
		err := sleep(ctx, d)
		w.Fake.ClearFaults()
		w.markFaultEnd()
		return err
	}
}

// chargedBetween counts the charged REST calls the fake answered in
// [from, to): every REST call but /rate_limit.
func chargedBetween(w *World, from, to time.Time) int {
	n := 0
	for _, c := range w.Fake.CallLog() {
		if c.Kind == fakegithub.KindREST && c.Route != fakegithub.RouteRateLimit && !c.At.Before(from) && c.At.Before(to) {
			n++
		}
	}
	return n
}

// primaryDrive spends the REST budget (as another user of the token
// would) so a primary limit holds until a reset window from now, queues
// jobs during it, and restores a full budget at the reset.
func primaryDrive(window time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, false); err != nil {
			return err
		}
		w.Fake.SetRateLimitWindow(window)
		w.Fake.SetRateLimit(1)
		if err := w.spendREST(ctx); err != nil {
			return err
		}
		_, remaining, reset := w.Fake.RateLimit()
		if remaining != 0 {
			return fmt.Errorf("the budget is %d after spending it", remaining)
		}
		from := time.Now()
		w.logf("primary limit until %s", reset.Format("15:04:05"))
		if err := sleep(ctx, time.Until(reset)/2); err != nil {
			return err
		}
		w.Enqueue(4, 2*time.Second)
		// The full budget is in place just before the reset, as GitHub's
		// is at it: set at the reset itself, a request arriving in the
		// same instant would open a new window of the spent budget, and
		// its 403 would carry a reset a whole window later.
		if err := sleep(ctx, time.Until(reset)-200*time.Millisecond); err != nil {
			return err
		}
		w.Fake.SetRateLimitWindow(time.Hour)
		w.Fake.SetRateLimit(5000)
		if err := sleep(ctx, time.Until(reset)); err != nil {
			return err
		}
		w.markFaultEnd()
		r.ChargedWhileLimited = w.Fake.ChargedCallsWhileLimited()
		if n := chargedBetween(w, from, reset); n != r.ChargedWhileLimited {
			r.note("charged REST calls in the call log while the limit held: %d (the fake's count: %d)", n, r.ChargedWhileLimited)
		}
		r.ChargedAllowed = int(math.Ceil(reset.Sub(from).Minutes()))
		return nil
	}
}

// spendREST makes one charged REST call with the world's token.
func (w *World) spendREST(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.Fake.APIURL()+"repos/"+Repo+"/actions/runners", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.Fake.Client().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("spending the budget: %s", resp.Status)
	}
	return nil
}

// secondaryDrive arms a secondary limit with retry-after d: the next
// charged REST call trips it, and calls before d elapsed are violations.
func secondaryDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, false); err != nil {
			return err
		}
		armed := time.Now()
		w.Fake.SecondaryLimit(d, 1)
		w.Enqueue(4, 2*time.Second)
		// The limit trips at the daemon's next charged call.
		var tripped time.Time
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_ = w.Fake.WaitFor(tctx, func() bool {
			for _, c := range w.Fake.CallLog() {
				if c.Kind == fakegithub.KindREST && c.Status == http.StatusForbidden && !c.At.Before(armed) {
					tripped = c.At
					return true
				}
			}
			return false
		})
		if tripped.IsZero() {
			r.note("the secondary limit never tripped: no charged REST call within 60 s")
			w.markFaultEnd()
			return nil
		}
		if err := sleep(ctx, time.Until(tripped.Add(d))); err != nil {
			return err
		}
		w.markFaultEnd()
		r.ChargedWhileLimited = w.Fake.ChargedCallsWhileLimited()
		r.ChargedAllowed = 0
		return nil
	}
}

// revokeDrive revokes the credentials for d, then restores them.
func revokeDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.Fake.RevokeCredentials()
		w.logf("credentials revoked for %s", d)
		err := sleep(ctx, d)
		w.Fake.RestoreCredentials()
		w.markFaultEnd()
		return err
	}
}

// outageDrive refuses connections for d (the fake stops listening on its
// address), then listens again.
func outageDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.Fake.StopListening()
		w.logf("outage for %s", d)
		err := sleep(ctx, d)
		if rerr := w.Fake.ResumeListening(); rerr != nil {
			return fmt.Errorf("the fake could not listen again: %w", rerr)
		}
		w.markFaultEnd()
		return err
	}
}
