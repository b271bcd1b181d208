package fakegithub

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// ActionsPath is where the fake serves the Actions service (the scale-set
// API and the runners' job protocol), under its URL, as GHES does.
const ActionsPath = "/_services/pipelines/"

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
	ci         ciContent // CI jobs' content (ci.go)

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
		downloadRate:              DefaultDownloadRate,
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
	s.ci.rate.Store(cfg.downloadRate)
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

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return b
}

func randomToken(prefix string) string { return prefix + hex.EncodeToString(randomBytes(18)) }
