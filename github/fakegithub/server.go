package fakegithub

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// ActionsPath is where the fake serves the Actions service (the scale-set
// API and the runners' job protocol), under its URL, as GHES does.
const ActionsPath = "/_services/pipelines/"

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

// Server is a fake GitHub on loopback: the REST API the classic clients
// call, the Actions scale-set service, the runners' job protocol, runner
// downloads and workflow_job webhooks, holding its state like the real one
// behind one mutex, with controls for tests (faults, rate limits, call
// counters, job histories). It is an ordinary package: the demo runs it too.
type Server struct {
	cfg        config
	hs         *loopback
	restMux    *http.ServeMux
	actionsMux *http.ServeMux
	adminKey   []byte
	runnerKey  *rsa.PrivateKey
	downloads  []download

	closed    chan struct{}
	closeOnce sync.Once
	bg        sync.WaitGroup
	skew      atomic.Int64 // how far tests moved the clock forward, in ns
	listenMu  sync.Mutex   // guards hs.Listener and stopped
	stopped   bool

	mu             sync.Mutex
	wake           chan struct{}
	orgs           map[string]*org
	enterprises    map[string]string
	repos          map[string]*repo
	groups         map[string][]*runnerGroup
	tokens         map[string]tokenInfo
	apps           map[int64]*app
	regTokens      map[string]regToken
	runners        map[int64]*runner
	runnerByClient map[string]int64
	runnerTokens   map[string]int64
	scaleSets      map[int]*scaleSet
	sessions       map[string]*ssSession
	queueTokens    map[string]*ssSession
	jobs           []*job
	jobByID        map[int64]*job
	nextID         int64
	nextRequestID  int64
	nextScaleSetID int
	rate           rateState
	secondary      secondaryState
	faults         map[string]Fault
	calls          map[string]int
	callKinds      map[kind]int
	callLog        []Call
	deprecated     map[string]bool
	latestRelease  string               // releases.go
	releaseProgram string               // releases.go
	badRelease     map[string]bool      // releases.go
	deprecations   map[string]depRec    // deprecations.go
	deprecatedAt   map[string]time.Time // when SetDeprecated was called
	zombie         bool
	hooks          hookState
	svc            serviceFaults // service_faults.go
	routeNames     []string
	// revoked: RevokeCredentials holds; every manager credential is 401.
	revoked             bool
	chargedWhileLimited int
	ledger              ledger // ledger.go
}

type tokenInfo struct {
	installation int64 // 0 for a personal access token
	expires      time.Time
	pat          bool
	scopes       []string // a classic PAT's OAuth scopes
}

type app struct {
	id            int64
	key           *rsa.PublicKey
	installations map[int64]bool
}

type regToken struct {
	scope   rm.Scope
	expires time.Time
	remove  bool
}

type rateState struct {
	limit, remaining int
	reset            time.Time
	window           time.Duration
}

type secondaryState struct {
	retryAfter time.Duration
	times      int
	until      time.Time
	violations int
}

// NewServer starts a fake GitHub on a loopback port. Close it when done.
func NewServer(opts ...Option) *Server {
	cfg := config{
		pollTimeout:               50 * time.Second,
		queueTokenLifetime:        time.Hour,
		adminTokenLifetime:        time.Hour,
		installationTokenLifetime: time.Hour,
		runnerLostAfter:           10 * time.Minute,
		offlineAfter:              30 * time.Second,
		rateLimit:                 5000,
		rateWindow:                time.Hour,
		downloadsVersion:          RunnerVersion,
		bootDelay:                 DefaultRunnerBootDelay,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:            cfg,
		restMux:        http.NewServeMux(),
		actionsMux:     http.NewServeMux(),
		adminKey:       randomBytes(32),
		runnerKey:      runnerKey(),
		closed:         make(chan struct{}),
		wake:           make(chan struct{}),
		orgs:           map[string]*org{},
		enterprises:    map[string]string{},
		repos:          map[string]*repo{},
		groups:         map[string][]*runnerGroup{},
		tokens:         map[string]tokenInfo{},
		apps:           map[int64]*app{},
		regTokens:      map[string]regToken{},
		runners:        map[int64]*runner{},
		runnerByClient: map[string]int64{},
		runnerTokens:   map[string]int64{},
		scaleSets:      map[int]*scaleSet{},
		sessions:       map[string]*ssSession{},
		queueTokens:    map[string]*ssSession{},
		jobByID:        map[int64]*job{},
		nextID:         1000,
		faults:         map[string]Fault{},
		calls:          map[string]int{},
		callKinds:      map[kind]int{},
		deprecated:     map[string]bool{},
		zombie:         cfg.zombie,
		svc:            serviceFaults{direct: cfg.direct},
		rate:           rateState{limit: cfg.rateLimit, remaining: cfg.rateLimit, window: cfg.rateWindow},
		hooks:          hookState{signal: make(chan struct{}, 1)},
	}
	s.rate.reset = resetAfter(time.Now(), cfg.rateWindow)
	s.routes()
	top := http.NewServeMux()
	top.Handle(ActionsPath, http.StripPrefix(strings.TrimSuffix(ActionsPath, "/"), s.actionsMux))
	top.Handle("/api/v3/", http.StripPrefix("/api/v3", s.restMux))
	top.Handle("/", s.restMux)
	s.hs = newLoopback(top)
	s.downloads = buildDownloads(s.hs.URL, cfg.downloadsVersion, "")
	for _, t := range cfg.tokens {
		s.AddToken(t)
	}
	for _, r := range cfg.repos {
		s.AddRepo(r)
	}
	s.bg.Add(2)
	go s.janitor()
	go s.deliverHooks()
	return s
}

// URL is the web URL (like https://github.com): runners are configured for
// URL/owner/repo, URL/org or URL/enterprises/slug.
func (s *Server) URL() string { return s.hs.URL }

// APIURL is the REST base URL, GHES style, with a trailing slash (what
// go-github's WithEnterpriseURLs wants).
func (s *Server) APIURL() string { return s.hs.URL + "/api/v3/" }

// ActionsURL is the Actions service URL runner-registration hands out.
func (s *Server) ActionsURL() string { return s.actionsURL() }

func (s *Server) actionsURL() string { return s.hs.URL + ActionsPath }

// Client is an HTTP client for the fake (plain loopback HTTP).
func (s *Server) Client() *http.Client { return s.hs.Client() }

// Close wakes every long poll, stops the server and its background work.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.listenMu.Lock()
		s.hs.CloseClientConnections()
		s.hs.Close()
		s.listenMu.Unlock()
		s.bg.Wait()
	})
}

func (s *Server) now() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) }

func (s *Server) janitor() {
	defer s.bg.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
			s.tick()
		}
	}
}

// kind classifies routes: how they authenticate, whether they spend the
// rate-limit budget, and which counter they add to.
type kind int

const (
	kindREST         kind = iota + 1 // PAT or installation token; spends the budget
	kindFree                         // GET /rate_limit: free
	kindApp                          // App JWT: installation token exchange
	kindRegistration                 // RemoteAuth registration token
	kindActions                      // scale-set service: admin token (or a queue token)
	kindQueue                        // message queue: queue token
	kindRunner                       // runner protocol: runner access token
	kindRunnerAuth                   // runner OAuth token exchange
	kindDownload                     // runner package blobs
)

func (k kind) restHost() bool { return k >= kindREST && k <= kindRegistration }

func (k kind) charged() bool { return k == kindREST || k == kindRegistration }

// managerCredential reports whether the kind authenticates with what a
// manager holds (RevokeCredentials refuses them all), not a runner's own.
func (k kind) managerCredential() bool {
	return k == kindREST || k == kindFree || k == kindApp || k == kindRegistration || k == kindActions || k == kindQueue
}

// revokedReply is the 401 each kind answers while credentials are revoked.
func revokedReply(k kind) reply {
	if k.restHost() {
		return ghError(http.StatusUnauthorized, "Bad credentials")
	}
	return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The access token is invalid or expired.")
}

// call is one request as a handler sees it, authenticated.
type call struct {
	r       *http.Request
	route   string
	scope   rm.Scope   // actions: the admin token's scope
	session *ssSession // queue token's session
	runner  int64      // runner token's runner (maybe deleted since)
	app     int64      // the app whose JWT signed the request
	token   tokenInfo  // the REST token
}

// reply is what a handler answers; the wrapper adds headers and writes it.
type reply struct {
	status int
	body   any    // JSON-encoded when raw is nil
	raw    []byte // sent as is
	ctype  string
	header http.Header
	free   bool // a 304: costs no budget
	// drop: the request took effect, then the connection is closed
	// without an answer (an answer cut off on its way).
	drop  bool
	token tokenInfo
}

func jsonReply(status int, body any) reply { return reply{status: status, body: body} }

const docsURL = "https://docs.github.com/rest"

// ghError is GitHub's REST error body.
func ghError(status int, msg string) reply {
	return jsonReply(status, map[string]string{"message": msg, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

// exception is the Actions service's error body.
func exception(status int, typeName, msg string) reply {
	return jsonReply(status, map[string]any{"typeName": typeName, "message": msg, "errorCode": 0})
}

// handle serves route (by default also its pattern) on mux.
func (s *Server) handle(mux *http.ServeMux, k kind, route string, h func(*call) reply, patterns ...string) {
	if len(patterns) == 0 {
		patterns = []string{route}
	}
	fn := s.wrap(k, route, h)
	for _, p := range patterns {
		mux.HandleFunc(p, fn)
	}
	s.routeNames = append(s.routeNames, route)
}

func (s *Server) wrap(k kind, route string, h func(*call) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := s.now()
		f, faulted := s.takeFault(route)
		if faulted && f.Latency > 0 && !s.pause(r.Context(), f.Latency) {
			return // the client or the server gave up first
		}
		var rep reply
		switch {
		case faulted && f.Drop:
			s.record(k, route, r, at, 0)
			hangUp(w)
			return
		case faulted && f.Status != 0:
			rep = faultReply(f)
		default:
			rep = s.serve(k, route, r, h)
		}
		if rep.token.pat {
			if rep.header == nil {
				rep.header = http.Header{}
			}
			rep.header.Set("X-OAuth-Scopes", strings.Join(rep.token.scopes, ", "))
		}
		if rep.drop {
			s.record(k, route, r, at, 0)
			hangUp(w)
			return
		}
		s.record(k, route, r, at, rep.status) // before the client can see the answer
		s.write(w, k, rep)
	}
}

// hangUp closes the request's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// pause waits d, or less if the request or the server ends; it reports
// whether the request should go on.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closed:
		return false
	}
}

func faultReply(f Fault) reply {
	rep := ghError(f.Status, http.StatusText(f.Status))
	if (f.Status == http.StatusForbidden || f.Status == http.StatusTooManyRequests) && f.RetryAfter > 0 {
		rep = secondaryLimitReply()
		rep.status = f.Status
	}
	if f.Body != "" {
		rep = reply{status: f.Status, raw: []byte(f.Body), ctype: "application/octet-stream"}
	}
	if f.RetryAfter > 0 {
		rep.header = http.Header{"Retry-After": {strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds())))}}
	}
	rep.free = true
	return rep
}

func (s *Server) serve(k kind, route string, r *http.Request, h func(*call) reply) reply {
	c := &call{r: r, route: route}
	s.mu.Lock()
	if k.charged() {
		if rep, limited := s.secondaryLimited(); limited {
			s.mu.Unlock()
			return rep
		}
	}
	if s.revoked && k != kindFree && k.managerCredential() {
		s.mu.Unlock()
		return revokedReply(k)
	}
	if rep, ok := s.authenticate(k, c); !ok {
		s.mu.Unlock()
		return rep
	}
	if k.charged() {
		s.refreshRate()
		if s.rate.remaining <= 0 {
			s.chargedWhileLimited++
			s.mu.Unlock()
			rep := ghError(http.StatusForbidden, "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.")
			rep.body.(map[string]string)["documentation_url"] = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"
			rep.free = true
			return rep
		}
	}
	s.mu.Unlock()
	rep := h(c)
	if !k.charged() {
		rep.free = true
	}
	rep.token = c.token
	return rep
}

func (s *Server) secondaryLimited() (reply, bool) {
	sec := &s.secondary
	now := s.now()
	switch {
	case now.Before(sec.until):
		sec.violations++
		s.chargedWhileLimited++
	case sec.times > 0:
		sec.times--
		sec.until = now.Add(sec.retryAfter)
	default:
		return reply{}, false
	}
	rep := secondaryLimitReply()
	rep.header = http.Header{"Retry-After": {strconv.Itoa(int(math.Ceil(sec.retryAfter.Seconds())))}}
	rep.free = true
	return rep, true
}

// secondaryLimitReply is GitHub's secondary-limit body (go-github tells it
// by its documentation_url).
func secondaryLimitReply() reply {
	rep := ghError(http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
	rep.body.(map[string]string)["documentation_url"] = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	return rep
}

func (s *Server) refreshRate() {
	if now := s.now(); !now.Before(s.rate.reset) {
		s.rate.remaining = s.rate.limit
		s.rate.reset = resetAfter(now, s.rate.window)
	}
}

// resetAfter is when a window starting now ends, on a whole second, as the
// x-ratelimit-reset header says it (clients wait until that second).
func resetAfter(now time.Time, window time.Duration) time.Time {
	t := now.Add(window)
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

func bearer(r *http.Request, schemes ...string) string {
	h := r.Header.Get("Authorization")
	for _, scheme := range schemes {
		if len(h) > len(scheme)+1 && strings.EqualFold(h[:len(scheme)], scheme) && h[len(scheme)] == ' ' {
			return strings.TrimSpace(h[len(scheme)+1:])
		}
	}
	return ""
}

// authenticate checks the credentials a route kind needs, with s.mu held.
func (s *Server) authenticate(k kind, c *call) (reply, bool) {
	r := c.r
	switch k {
	case kindREST, kindFree:
		tok := bearer(r, "Bearer", "token")
		if tok == "" {
			if k == kindFree {
				return reply{}, true
			}
			return ghError(http.StatusUnauthorized, "Requires authentication"), false
		}
		if s.revoked {
			return ghError(http.StatusUnauthorized, "Bad credentials"), false
		}
		ti, ok := s.tokens[tok]
		if !ok || (!ti.expires.IsZero() && s.now().After(ti.expires)) {
			return ghError(http.StatusUnauthorized, "Bad credentials"), false
		}
		c.token = ti
	case kindApp:
		id, err := s.verifyAppJWT(r)
		if err != nil {
			return ghError(http.StatusUnauthorized, "A JSON web token could not be decoded"), false
		}
		c.app = id
	case kindRegistration:
		tok := bearer(r, "RemoteAuth")
		rt, ok := s.regTokens[tok]
		if !ok || rt.remove || s.now().After(rt.expires) {
			return ghError(http.StatusUnauthorized, "Bad credentials"), false
		}
		c.scope = rt.scope
	case kindActions:
		tok := bearer(r, "Bearer")
		if se, ok := s.queueTokens[tok]; ok && s.now().Before(se.tokenExpires) {
			c.session, c.scope = se, se.ss.scope
			return reply{}, true
		}
		sc, err := s.verifyAdminToken(tok)
		if err != nil {
			return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The access token is invalid or expired."), false
		}
		c.scope = sc
	case kindQueue:
		se, ok := s.queueTokens[bearer(r, "Bearer")]
		if !ok || s.now().After(se.tokenExpires) {
			return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The message queue token expired."), false
		}
		c.session = se
	case kindRunner:
		id, ok := s.runnerTokens[bearer(r, "Bearer")]
		if !ok {
			return exception(http.StatusUnauthorized, "GitHub.Services.WebApi.VssUnauthorizedException", "The runner access token is invalid."), false
		}
		c.runner = id
	}
	return reply{}, true
}

func (s *Server) write(w http.ResponseWriter, k kind, rep reply) {
	h := w.Header()
	for key, v := range rep.header {
		h[key] = v
	}
	if k.restHost() && s.cfg.rateLimitingOff {
		h.Set("X-GitHub-Request-Id", strings.ToUpper(hex.EncodeToString(randomBytes(8))))
	} else if k.restHost() {
		s.mu.Lock()
		s.refreshRate()
		if k.charged() && !rep.free && s.rate.remaining > 0 {
			s.rate.remaining--
		}
		rate := s.rate
		s.mu.Unlock()
		h.Set("X-RateLimit-Limit", strconv.Itoa(rate.limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(rate.remaining))
		h.Set("X-RateLimit-Used", strconv.Itoa(rate.limit-rate.remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(rate.reset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		h.Set("X-GitHub-Request-Id", strings.ToUpper(hex.EncodeToString(randomBytes(8))))
	} else {
		h.Set("ActivityId", hex.EncodeToString(randomBytes(16)))
	}
	body := rep.raw
	if body == nil && rep.body != nil {
		var err error
		if body, err = json.Marshal(rep.body); err != nil {
			rep.status, body = http.StatusInternalServerError, []byte(`{"message":"fake: cannot encode reply"}`)
		}
	}
	if rep.status == http.StatusNoContent || rep.status == http.StatusNotModified || rep.status == http.StatusAccepted {
		body = nil
	}
	if body != nil {
		ct := rep.ctype
		if ct == "" {
			ct = "application/json; charset=utf-8"
		}
		h.Set("Content-Type", ct)
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write(body)
}

// record counts a call once it was answered.
func (s *Server) record(k kind, route string, r *http.Request, at time.Time, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[route]++
	s.callKinds[k]++
	if len(s.callLog) >= maxCallLog {
		s.callLog = append(s.callLog[:0], s.callLog[maxCallLog/2:]...)
	}
	s.callLog = append(s.callLog, Call{At: at, Route: route, Path: r.URL.Path, Status: status, Kind: k.String()})
	s.cfg.logger.Debug("fakegithub", "route", route, "status", status)
}

const maxCallLog = 100_000

func (k kind) String() string {
	switch k {
	case kindREST, kindFree, kindApp, kindRegistration:
		return KindREST
	case kindActions, kindQueue:
		return KindScaleSet
	case kindRunner, kindRunnerAuth:
		return KindRunner
	case kindDownload:
		return KindDownload
	}
	return "unknown"
}

// The kinds of Call.Kind.
const (
	// KindREST: the REST API (api/v3), including the token exchanges.
	KindREST = "rest"
	// KindScaleSet: the scale-set service a manager calls (admin and
	// message queue).
	KindScaleSet = "scaleset"
	// KindRunner: what runners call.
	KindRunner = "runner"
	// KindDownload: runner package blobs.
	KindDownload = "download"
)

// etag answers body with an ETag, or 304 (free) when the request's
// If-None-Match names it.
func etagReply(c *call, status int, body any, extra http.Header) reply {
	b, err := json.Marshal(body)
	if err != nil {
		return ghError(http.StatusInternalServerError, "fake: cannot encode reply")
	}
	sum := sha256.Sum256(b)
	tag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	h := http.Header{"Etag": {tag}, "Cache-Control": {"private, max-age=60, s-maxage=60"}, "Vary": {"Accept, Authorization"}}
	for _, cand := range strings.Split(c.r.Header.Get("If-None-Match"), ",") {
		cand = strings.TrimSpace(cand)
		if cand == tag || strings.TrimPrefix(cand, "W/") == strings.TrimPrefix(tag, "W/") || cand == "*" {
			return reply{status: http.StatusNotModified, header: h, free: true}
		}
	}
	for key, v := range extra {
		h[key] = v
	}
	return reply{status: status, raw: b, header: h}
}

// paginate returns the slice bounds of the requested page and the Link
// header for it (per_page at most 100, default 30).
func paginate(c *call, n int) (lo, hi int, h http.Header) {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((n+per-1)/per, 1)
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	u, err := url.Parse(c.r.RequestURI)
	if err != nil {
		return lo, hi, nil
	}
	link := func(p int, rel string) string {
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		uu := url.URL{Scheme: "http", Host: c.r.Host, Path: u.Path, RawQuery: qq.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", uu.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	if len(links) > 0 {
		h = http.Header{"Link": {strings.Join(links, ", ")}}
	}
	return lo, hi, h
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return b
}

func randomToken(prefix string) string { return prefix + hex.EncodeToString(randomBytes(18)) }
