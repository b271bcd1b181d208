// Package github owns everything the manager asks of GitHub: a target's
// demand (how many runners it wants, with job events), JIT runner
// configurations, runner removal and listing, and runner downloads. Its
// targets, ScaleSetTarget (scale-set mode over github.com/actions/scaleset)
// and ClassicTarget (classic mode over go-github), implement the Target
// that package reconcile declares, and share one transport
// (authentication, rate limits, retries, conditional requests).
// github/fakegithub is a fake GitHub for tests and the demo.
package github

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// The errors of this package, wrapped with detail; test with errors.Is.
var (
	// ErrRunnerBusy: GitHub refused to remove a runner that is running a
	// job (REST 422). Leave it running.
	ErrRunnerBusy = errors.New("runner is still running a job")
	// ErrNotFound: the repository, organization, enterprise, runner group
	// or scale set does not exist, or the credentials cannot see it.
	ErrNotFound = errors.New("not found on GitHub")
	// ErrUnauthorized: the credentials were refused (revoked or expired
	// token, wrong app key) or lack a permission.
	ErrUnauthorized = errors.New("GitHub refused the credentials")
	// ErrSessionConflict: another manager holds the scale set's message
	// session.
	ErrSessionConflict = errors.New("the scale set's message session is held")
	// ErrNoQueueURL: GitHub opened a message session without a
	// message-queue URL (a broker incident); it is deleted, never polled.
	ErrNoQueueURL = errors.New("message session without a queue URL")
	// ErrCannotList: the target's service offers no list of its runners
	// (scale-set mode); look each one up with LookupRunner.
	ErrCannotList = errors.New("GitHub cannot list this target's runners")
)

// RateLimitError is returned instead of sending a request while the budget
// is exhausted, or when GitHub answered with a rate limit.
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

// Budget is the core REST rate-limit budget as last seen.
type Budget struct {
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	Used      int       `json:"used"`
	Reset     time.Time `json:"reset"`
	// SeenAt is when the headers were read; zero if never.
	SeenAt time.Time `json:"seen_at"`
}

// Runner is a runner registration as GitHub lists it.
type Runner struct {
	ID     int64
	Name   string
	Online bool
	Busy   bool
	Labels []string
}

// JITConfig is a just-in-time runner configuration.
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

// JobEventKind is what happened to a job.
type JobEventKind string

// The job events passed on from GitHub.
const (
	JobAssigned  JobEventKind = "assigned"
	JobStarted   JobEventKind = "started"
	JobCompleted JobEventKind = "completed"
)

// JobEvent tells which runner started or completed which job.
type JobEvent struct {
	Kind JobEventKind
	// JobID is the job's id as its source gives it (runnermanager.Job.ID):
	// a scale-set message's jobId (an opaque string), or its
	// runnerRequestId in decimal when it has none; in classic mode and
	// from webhooks the REST job number in decimal. "" when not told.
	JobID string
	// JobNumber is the REST job number, 0 when not known (scale-set
	// messages do not carry it).
	JobNumber  int64
	RunID      int64
	RunnerID   int64
	RunnerName string
	// Result of a completed job ("succeeded", "failed", "canceled", ...).
	Result      string
	Workflow    string
	DisplayName string
	Labels      []string
	At          time.Time
	// QueuedAt is when GitHub queued the job (zero when not told): At −
	// QueuedAt of a started job is how long it waited for a runner.
	QueuedAt time.Time
}

// restJobID is a REST job number as a JobEvent's JobID: the number in
// decimal, "" for 0 (not told).
func restJobID(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// Demand is how many runners a target wants now.
type Demand struct {
	// Wanted is the number of jobs assigned to the target, waiting or
	// running (scale-set mode: statistics.TotalAssignedJobs; classic mode:
	// matching queued and in-progress jobs).
	Wanted int
	// Queued is the number of jobs GitHub holds for the target and has not
	// assigned, because the capacity told to it is taken (scale-set mode:
	// statistics.TotalAvailableJobs + TotalAcquiredJobs: offered, or taken
	// and waiting for capacity; classic mode counts them in Wanted).
	Queued int
	Events []JobEvent
	At     time.Time
}

// Download is one runner package GitHub offers.
type Download struct {
	OS, Arch, URL, Filename, SHA256 string
}
