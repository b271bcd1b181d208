package chaos

import (
	"context"
	"fmt"
	"net/http"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// The Actions service's failures of 2026, each seen in GitHub's code or
// its incidents (the fake's service_faults.go names the source of each):
// scale-set mode only, as classic mode speaks no message session.
func serviceScenarios(f func(short, full int) int, d func(short, full time.Duration) time.Duration) []Scenario {
	const bound = 30 * time.Second // next job after GitHub is healthy again
	return []Scenario{
		{Name: "forgotten-sessions/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 40), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Drive: forgetDrive(f(1, 3))},
		{Name: "scale-set-deleted/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 40), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Drive: deleteScaleSetDrive(f(1, 3))},
		{Name: "empty-queue-url/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 40), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Drive: emptyQueueURLDrive(d(10*time.Second, 60*time.Second))},
		{Name: "session-cut-off/scale-set", Mode: rm.ModeScaleSet, Jobs: f(8, 30), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Drive: cutSessionDrive(d(5*time.Second, 30*time.Second))},
		{Name: "direct-assignment/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 60), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Fake: []fakegithub.Option{fakegithub.WithDirectAssignment()}, Drive: killDrive(f(1, 5))},
		// kill9-scaleset meets the fake's default, runner-registration
		// answered 201 as GitHub's test servers do; this one the 200 that
		// GitHub's clients take too.
		{Name: "kill9-registration200/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 100), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: 5 * time.Second, Fake: []fakegithub.Option{fakegithub.WithRunnerRegistrationStatus(http.StatusOK)}, Drive: killDrive(f(2, 10))},
		{Name: "registration-refused/scale-set", Mode: rm.ModeScaleSet, Jobs: f(12, 40), JobDuration: 2 * time.Second, Max: 4,
			RecoveryBound: bound, Drive: registrationRefusedDrive(f(1, 3))},
	}
}

// forgetDrive makes the service forget every message session, times
// times while jobs run (actions/scaleset #123).
func forgetDrive(times int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		total := countJobs(w.Fake.Jobs()).total
		for k := 1; k <= times; k++ {
			if err := w.waitCompleted(ctx, k*total/(times+1), true); err != nil {
				return err
			}
			w.Fake.ForgetSessions()
			w.logf("the service forgot every message session")
			w.markFaultEnd()
		}
		return nil
	}
}

// deleteScaleSetDrive has GitHub delete the scale set by itself, times
// times while jobs run (actions/actions-runner-controller #3935, #4370).
func deleteScaleSetDrive(times int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		total := countJobs(w.Fake.Jobs()).total
		for k := 1; k <= times; k++ {
			if err := w.waitCompleted(ctx, k*total/(times+1), true); err != nil {
				return err
			}
			if n := w.Fake.DeleteScaleSet(w.label); n != 1 {
				return fmt.Errorf("GitHub deleted %d scale sets named %q, not 1", n, w.label)
			}
			w.logf("GitHub deleted the scale set")
			w.markFaultEnd()
		}
		return nil
	}
}

// emptyQueueURLDrive makes every session opened or refreshed for d come
// without a message-queue URL (actions/actions-runner-controller #4370),
// forcing a new session at its start.
func emptyQueueURLDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.Fake.SetEmptyQueueURL(1 << 30)
		w.Fake.ForgetSessions()
		w.logf("sessions come without a queue URL for %s", d)
		err := sleep(ctx, d)
		w.Fake.SetEmptyQueueURL(0)
		w.markFaultEnd()
		return err
	}
}

// cutSessionDrive cuts off the answer of the next session create (the
// service forgot the old one first): GitHub holds a session of the
// manager's own name that its journal cannot name, and lets it go after
// held.
func cutSessionDrive(held time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		owner := ""
		for _, s := range w.Fake.ScaleSets() {
			if s.Name == w.label {
				owner = s.SessionOwner
			}
		}
		if owner == "" {
			return fmt.Errorf("no session of scale set %q to cut", w.label)
		}
		w.Fake.CutSessionCreates(1)
		w.Fake.ForgetSessions()
		w.logf("the next session create is cut off; GitHub keeps it for %s", held)
		if err := sleep(ctx, held); err != nil {
			return err
		}
		if n := w.Fake.DropSessionsOf(w.label, owner); n != 1 {
			r.note("GitHub held %d sessions of the manager's name when it let them go (want 1)", n)
		}
		w.markFaultEnd()
		return nil
	}
}

// registrationRefusedDrive refuses runner-registration with 401 and then
// 403, a few times each, while the daemon restarts after kill -9 (the
// path that deletes its stale session), times times.
func registrationRefusedDrive(times int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		total := countJobs(w.Fake.Jobs()).total
		for k := 1; k <= times; k++ {
			if err := w.waitCompleted(ctx, k*total/(times+1), true); err != nil {
				return err
			}
			if err := w.Kill9(); err != nil {
				return err
			}
			status := http.StatusUnauthorized
			if k%2 == 0 {
				status = http.StatusForbidden
			}
			w.Fake.Fault(fakegithub.RouteRunnerRegistration, fakegithub.Fault{Status: status, Times: 3})
			w.logf("runner-registration answers %d three times", status)
			if err := w.StartDaemon(); err != nil {
				return err
			}
			w.markFaultEnd()
		}
		return nil
	}
}
