package runnermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Registrar is where a scale target's runners register: it hands out
// just-in-time configurations, removes registrations and says which exist.
// GitHub's scale sets and its classic REST runners are two. A loop asks
// one registrar per target.
type Registrar interface {
	// JITConfig registers a runner named runnerName and returns its
	// configuration. A name that exists and is ours (same prefix) is
	// removed and retried once.
	JITConfig(ctx context.Context, runnerName string) (JITConfig, error)
	// RemoveRunner deletes a registration: ErrRunnerBusy while it runs a
	// job (GitHub's REST 422); nil if it does not exist (already removed).
	RemoveRunner(ctx context.Context, id int64) error
	// Runners lists the target's registrations whose name starts with
	// namePrefix, every page. A registrar that cannot list them
	// (scale-set runners are not in GitHub's REST runner list) returns an
	// error wrapping ErrCannotList: ask LookupRunner per runner instead.
	Runners(ctx context.Context, namePrefix string) ([]Runner, error)
	// LookupRunner asks the service that registered a runner whether its
	// registration still exists, by id (by name when id is 0). found is
	// false, with a nil error, only when the service says it is gone; any
	// doubt (5xx, network, rate limit) is an error, never "gone".
	LookupRunner(ctx context.Context, id int64, name string) (r Runner, found bool, err error)
}

// SharedRunnerLister is a Registrar whose runner list is shared with the
// other registrars of its scope (GitHub's classic targets: every one of a
// repository on one client reads the same REST list). A caller that has it
// asks for a list no older than what its reason for listing needs, so that
// one request serves every loop of the scope that needs a list within
// that bound, instead of one request per loop.
//
// Its times are on the caller's clock: the registrar's clock must be the
// caller's, as time.Now is for both by default.
type SharedRunnerLister interface {
	// RunnersSince is Runners from a list whose request was sent at or
	// after notBefore; at is when it was sent. A list the call sent itself
	// is returned even if notBefore is later. Registrations the
	// registrar removed are left out of lists sent before their removal.
	RunnersSince(ctx context.Context, namePrefix string, notBefore time.Time) (runners []Runner, at time.Time, err error)
}

// Runner is a runner registration as its registrar lists it.
type Runner struct {
	ID     int64
	Name   string
	Online bool
	Busy   bool
	Labels []string
}

// JITConfig is a just-in-time runner configuration: one registration, for
// one job.
type JITConfig struct {
	RunnerID   int64
	RunnerName string
	// Encoded is what the runner reads from ACTIONS_RUNNER_INPUT_JITCONFIG.
	// It is a credential: it never reaches a log, argv or an error.
	Encoded string
}

// String hides the encoded configuration.
func (j JITConfig) String() string {
	return fmt.Sprintf("JITConfig{runner %d %q, config redacted}", j.RunnerID, j.RunnerName)
}

// LogValue hides the encoded configuration from slog.
func (j JITConfig) LogValue() slog.Value { return slog.StringValue(j.String()) }

// The errors a registrar or a demand source returns, wrapped with detail;
// test with errors.Is. A loop backs off on any other error of theirs (5xx,
// network) and never counts it against a runner.
var (
	// ErrRunnerBusy: the registrar refused to remove a runner that is
	// running a job (GitHub's REST 422). Leave it running.
	ErrRunnerBusy = NewError(ClassConflict, "runner is still running a job")
	// ErrNotFound: the target's scope (repository, organization,
	// enterprise), runner group or scale set does not exist, or the
	// credentials cannot see it.
	ErrNotFound = NewError(ClassNotFound, "not found on GitHub")
	// ErrUnauthorized: the credentials were refused (revoked or expired
	// token, wrong app key) or lack a permission.
	ErrUnauthorized = NewError(ClassAuthFailed, "GitHub refused the credentials")
	// ErrSessionConflict: another manager holds the scale set's message
	// session.
	ErrSessionConflict = NewError(ClassConflict, "the scale set's message session is held")
	// ErrCannotList: the registrar offers no list of its runners
	// (scale-set mode); look each one up with LookupRunner.
	ErrCannotList = errors.New("GitHub cannot list this target's runners")
)

// RateLimitError is returned instead of sending a request while the budget
// is exhausted, or when the service answered with a rate limit. A loop
// holds its calls until Reset.
type RateLimitError struct {
	// Reset is when requests may be sent again.
	Reset time.Time
	// Secondary is true for a secondary (abuse) limit with retry-after.
	Secondary bool
}

func (e *RateLimitError) Error() string {
	kind := "primary"
	if e.Secondary {
		kind = "secondary"
	}
	return fmt.Sprintf("GitHub %s rate limit: no requests until %s", kind, e.Reset.Format(time.RFC3339))
}

// Budget is a rate-limit budget as last seen (GitHub's core REST budget:
// x-ratelimit-limit, -remaining, -used, -reset).
type Budget struct {
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	Used      int       `json:"used"`
	Reset     time.Time `json:"reset"`
	// SeenAt is when the headers were read; zero if never.
	SeenAt time.Time `json:"seen_at"`
}

// MaxOutageWait caps the wait between two tries while a registrar or a
// demand source fails (5xx, network, refused credentials, a forgotten
// session): how late, at most, the manager notices that the service is
// back. Rate limits are waited out to their reset instead.
const MaxOutageWait = 5 * time.Second
