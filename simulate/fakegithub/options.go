package fakegithub

import (
	"fmt"
	"log/slog"
	"time"
)

// config is what the options set.
type config struct {
	pollTimeout               time.Duration
	queueTokenLifetime        time.Duration
	adminTokenLifetime        time.Duration
	installationTokenLifetime time.Duration
	sessionIdleTimeout        time.Duration
	assignTimeout             time.Duration
	runnerLostAfter           time.Duration
	offlineAfter              time.Duration
	dropIdleAfter             time.Duration
	rateLimit                 int
	rateWindow                time.Duration
	zombie                    bool
	rateLimitingOff           bool
	logger                    *slog.Logger
	tokens                    []string
	repos                     []string
	downloadsVersion          string
	bootDelay                 time.Duration
	direct                    bool
	// runnerRegistrationStatus answers POST /actions/runner-registration.
	runnerRegistrationStatus int
	jobIDs                   JobIDForm
	installationTokens       InstallationTokenForm
	downloadRate             int64
}

// Option configures a Server.
type Option func(*config)

// WithPollTimeout sets how long a long poll (the scale-set message queue and
// the runners' job poll) waits before answering 202 with nothing; GitHub
// waits about 50 s, tests want 100 ms to 1 s.
func WithPollTimeout(d time.Duration) Option { return func(c *config) { c.pollTimeout = d } }

// WithQueueTokenLifetime sets how long a message session's queue token
// works; after it, the queue answers 401 until the session is refreshed.
func WithQueueTokenLifetime(d time.Duration) Option {
	return func(c *config) { c.queueTokenLifetime = d }
}

// WithAdminTokenLifetime sets how long the Actions service admin token from
// runner-registration works (the scaleset client refreshes it a minute
// before it expires).
func WithAdminTokenLifetime(d time.Duration) Option {
	return func(c *config) { c.adminTokenLifetime = d }
}

// WithInstallationTokenLifetime sets how long a GitHub App installation
// token works.
func WithInstallationTokenLifetime(d time.Duration) Option {
	return func(c *config) { c.installationTokenLifetime = d }
}

// WithSessionIdleTimeout makes a message session nobody polled for d lapse
// on its own. Zero, the default, means never, as GitHub promises nothing of
// the kind: a manager killed without deleting its session finds the scale
// set taken (409 SessionConflictException) until the session is deleted by
// its id. Opt in only where a test is about something else.
func WithSessionIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.sessionIdleTimeout = d }
}

// WithAssignTimeout makes a job assigned to a scale set and taken by no
// runner within d come back as JobCompleted "canceled" and be queued again
// (at most 3 times, then it stays canceled). Zero (the default) disables it.
func WithAssignTimeout(d time.Duration) Option { return func(c *config) { c.assignTimeout = d } }

// WithRunnerLostAfter sets after how long without news from a busy runner
// its job fails and the runner shows offline (default 10 min). Runners
// renew their job four times per period.
func WithRunnerLostAfter(d time.Duration) Option {
	return func(c *config) { c.runnerLostAfter = d }
}

// WithOfflineAfter sets after how long without a poll an idle runner shows
// offline (default 30 s).
func WithOfflineAfter(d time.Duration) Option { return func(c *config) { c.offlineAfter = d } }

// WithDropIdleRunnersAfter makes the fake drop a JIT runner's registration
// once it has been online for d without a job, as GitHub has been seen to:
// the runner exits 0 without having run anything. Zero (the default)
// disables it.
func WithDropIdleRunnersAfter(d time.Duration) Option {
	return func(c *config) { c.dropIdleAfter = d }
}

// DefaultRunnerBootDelay is how long the fake runner takes by default
// from its start to "Listening for Jobs": about what the real
// Runner.Listener takes to start, read its configuration, connect and
// open its session (docs/performance.md says where the figure comes from).
const DefaultRunnerBootDelay = 2 * time.Second

// WithRunnerBootDelay sets how long the fake runners of this server take
// to start before they connect (default DefaultRunnerBootDelay; 0: at
// once). It travels in each runner's JIT configuration.
func WithRunnerBootDelay(d time.Duration) Option {
	return func(c *config) { c.bootDelay = max(d, 0) }
}

// WithRateLimit sets the core REST budget per window (default 5000 an hour).
func WithRateLimit(perWindow int) Option { return func(c *config) { c.rateLimit = perWindow } }

// WithRateLimitWindow sets the rate-limit window (default an hour), so tests
// see a reset soon.
func WithRateLimitWindow(d time.Duration) Option { return func(c *config) { c.rateWindow = d } }

// WithRateLimitingOff makes the fake a GitHub Enterprise Server with REST
// rate limiting off (GHES's default: "Rate limits are disabled by default
// for GitHub Enterprise Server", docs.github.com/enterprise-server@3.19/rest/
// using-the-rest-api/rate-limits-for-the-rest-api): GET /rate_limit answers
// 404 "Rate limiting is not enabled." (GitHub's REST description lists 404
// for the operation rate-limit/get) and no answer carries x-ratelimit-*.
func WithRateLimitingOff() Option { return func(c *config) { c.rateLimitingOff = true } }

// Zombie makes runners whose registration was deleted keep hearing
// "nothing for you" instead of "you are gone", so they stay alive: the
// zombie the manager's reaper must catch.
func Zombie() Option { return func(c *config) { c.zombie = true } }

// WithLogger logs every request (method, route, status; never a token).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithToken makes the fake accept token as a personal access token.
func WithToken(token string) Option { return func(c *config) { c.tokens = append(c.tokens, token) } }

// WithRepo adds the repository "owner/repo" (and its owner as an
// organization).
func WithRepo(ownerRepo string) Option {
	return func(c *config) { c.repos = append(c.repos, ownerRepo) }
}

// WithRunnerRegistrationStatus sets the status of a successful
// POST /actions/runner-registration (default 201, as GitHub's own test
// servers answer: actions/scaleset v0.4.0 internal/testserver/server.go:93-104
// and actions-runner-controller github/actions/testserver/server.go:96,107).
// Every GitHub client takes any 2xx there (actions/scaleset client.go:894;
// actions/runner ConfigurationManager.cs GetTenantCredential's
// IsSuccessStatusCode): 200 checks a client does too. A code outside
// 200-299 panics.
func WithRunnerRegistrationStatus(code int) Option {
	if code < 200 || code > 299 {
		panic(fmt.Sprintf("fakegithub: runner-registration success status %d is not a 2xx", code))
	}
	return func(c *config) { c.runnerRegistrationStatus = code }
}

// JobIDForm is the form of the jobId a scale-set job message carries: the
// service's own id of the job, a string (actions/scaleset v0.4.0 types.go:
// JobMessageBase.JobID string), not the REST job number.
type JobIDForm int

// The forms of a scale-set message's jobId.
const (
	// JobIDUUID: a UUID, as reported of github.com (the default).
	JobIDUUID JobIDForm = iota
	// JobIDNumeric: the job's REST number in decimal, a string that reads
	// as a number.
	JobIDNumeric
	// JobIDNone: no jobId, as from a server older than the field
	// (cloudbase/garm #459); the messages name the job by runnerRequestId
	// alone.
	JobIDNone
)

// WithScaleSetJobIDs sets the form of the jobId in scale-set job messages
// (default JobIDUUID). The REST routes and webhooks give the REST number
// whatever the form.
func WithScaleSetJobIDs(f JobIDForm) Option { return func(c *config) { c.jobIDs = f } }

// WithDownloadsVersion sets the runner version the downloads list offers
// (default the fake runner's version).
func WithDownloadsVersion(v string) Option { return func(c *config) { c.downloadsVersion = v } }

// InstallationTokenForm is the form of the GitHub App installation tokens
// the fake mints.
type InstallationTokenForm int

// The forms of an installation token.
const (
	// InstallationTokensBoth alternates the two forms below, stateless
	// first, across every fake of the process (the default): a test run
	// sees both, a test that mints two tokens sees both.
	InstallationTokensBoth InstallationTokenForm = iota
	// InstallationTokensStateless: ghs_APPID_JWT, about 520 characters with
	// two dots, GitHub's form since 2026-04-27.
	InstallationTokensStateless
	// InstallationTokensClassic: ghs_ and 36 characters, the form before.
	InstallationTokensClassic
)

// WithInstallationTokens sets the form of the installation tokens (default
// InstallationTokensBoth). As on GitHub, a token request's header
// X-GitHub-Stateless-S2S-Token: enabled (or disabled) asks for the
// stateless (or classic) form whatever this says.
func WithInstallationTokens(f InstallationTokenForm) Option {
	return func(c *config) { c.installationTokens = f }
}

// WithDownloadRate sets how fast the content CI jobs fetch is sent, in
// bytes per second (default DefaultDownloadRate); negative sends as fast
// as loopback goes.
func WithDownloadRate(bytesPerSecond int64) Option {
	return func(c *config) { c.downloadRate = bytesPerSecond }
}
