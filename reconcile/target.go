package reconcile

import (
	"context"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Target is what a loop asks of one scale target's GitHub side: its
// registrations and its demand. github.ScaleSetTarget (scale-set mode) and
// github.ClassicTarget (classic mode) implement it; the types it exchanges
// (runners, JIT configurations, demand and job events) are GitHub's and
// stay in package github.
type Target interface {
	// JITConfig registers a runner named runnerName and returns its
	// configuration. A name that exists and is ours (same prefix) is
	// removed and retried once.
	JITConfig(ctx context.Context, runnerName string) (rm.JITConfig, error)
	// RemoveRunner deletes a registration: rm.ErrRunnerBusy while it
	// runs a job; nil if it does not exist (already removed).
	RemoveRunner(ctx context.Context, id int64) error
	// Runners lists the target's registrations whose name starts with
	// namePrefix, every page. A target whose service cannot list them
	// (scale-set runners are not in GitHub's REST runner list) returns an
	// error wrapping rm.ErrCannotList: ask LookupRunner per runner
	// instead.
	Runners(ctx context.Context, namePrefix string) ([]rm.Runner, error)
	// LookupRunner asks the service that registered a runner whether its
	// registration still exists, by id (by name when id is 0). found is
	// false, with a nil error, only when GitHub says it is gone; any doubt
	// (5xx, network, rate limit) is an error, never "gone".
	LookupRunner(ctx context.Context, id int64, name string) (r rm.Runner, found bool, err error)

	// Watch calls report with each demand figure and its job events until
	// ctx is done (returning nil) or a fatal error (rm.ErrUnauthorized,
	// ErrNotFound, ErrSessionConflict). maxCapacity is read before every
	// poll: it is the admitted capacity, and changes live.
	Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error
	// Waiting says why a watch that recovers by itself is not serving
	// demand now (credentials refused, GitHub unreachable, a lost scale set
	// being found again) and since when; nil while it serves. A target
	// whose Watch returns its errors instead answers nil.
	Waiting() (reason error, since time.Time)

	// Close releases what the target holds (a scale-set message session).
	Close(ctx context.Context) error
}
