package github_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/stretchr/testify/require"
)

// The fixtures of the tests against the fake GitHub.
const (
	fakeToken = "ghp_fakeTOKENforTESTSonly0000000000000"
	fakeRepo  = "octo-org/app"
	prefix    = "rm-testhost-"
	appID     = 77
	appInst   = 99
)

// authKinds are the credentials every client test runs with.
var authKinds = []string{"PAT", "App", "AppClientID"}

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeEnv is a fake GitHub with a client of one auth kind.
type fakeEnv struct {
	fake   *fakegithub.Server
	client *github.Client
	logs   *logBuffer
	sleeps *sleeps
	// secrets must never be printed.
	secrets []string
}

// newFakeEnv starts a fake GitHub with fakeRepo and a client authenticated
// by kind. Sleeps are recorded and skipped unless realSleep.
func newFakeEnv(t *testing.T, kind string, opts ...fakegithub.Option) *fakeEnv {
	t.Helper()
	// App's installation tokens are GitHub's stateless form of 2026
	// (ghs_APPID_JWT), AppClientID's the classic one: each test over
	// authKinds sees both.
	form := fakegithub.InstallationTokensStateless
	if kind == "AppClientID" {
		form = fakegithub.InstallationTokensClassic
	}
	opts = append([]fakegithub.Option{fakegithub.WithToken(fakeToken), fakegithub.WithRepo(fakeRepo), fakegithub.WithInstallationTokens(form)}, opts...)
	fake := githubtest.NewTestServer(t, opts...)
	env := &fakeEnv{fake: fake, logs: &logBuffer{}, sleeps: &sleeps{}}
	cfg := github.Config{
		WebURL: fake.URL(), APIURL: fake.APIURL(),
		Logger: newTextLogger(env.logs),
		Sleep:  env.sleeps.Sleep,
	}
	switch kind {
	case "PAT":
		cfg.Token = fakeToken
		env.secrets = []string{fakeToken}
	case "App", "AppClientID":
		key, keyPEM := rsaKey(t)
		fake.AddApp(appID, &key.PublicKey, appInst)
		cfg.App = &github.App{AppID: appID, InstallationID: appInst, PrivateKeyPEM: keyPEM}
		if kind == "AppClientID" {
			cfg.App = &github.App{ClientID: fakegithub.AppClientID(appID), InstallationID: appInst, PrivateKeyPEM: keyPEM}
		}
		for _, line := range strings.Split(string(keyPEM), "\n") {
			if line != "" && !strings.HasPrefix(line, "-----") {
				env.secrets = append(env.secrets, line)
			}
		}
	default:
		t.Fatalf("unknown auth kind %q", kind)
	}
	c, err := github.New(cfg)
	require.NoError(t, err)
	env.client = c
	t.Cleanup(func() {
		logs := env.logs.String()
		secrets := env.secrets
		for _, c := range fake.CredentialLedger() {
			if c.Kind == fakegithub.CredInstallationToken {
				secrets = append(secrets, c.Value)
			}
		}
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Errorf("a secret was logged")
			}
		}
	})
	return env
}

// noSecret fails the test if err's text holds a secret.
func (e *fakeEnv) noSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	text := fmt.Sprintf("%v %+v", err, err)
	for _, s := range e.secrets {
		if strings.Contains(text, s) {
			t.Fatalf("an error holds a secret")
		}
	}
}

func repoScope(t *testing.T) rm.Scope {
	t.Helper()
	s, err := rm.Repository(fakeRepo)
	require.NoError(t, err)
	return s
}

func labelTarget(t *testing.T, scope rm.Scope, group string, labels ...string) rm.ScaleTarget {
	t.Helper()
	tg, err := rm.NewLabelTarget(scope, group, labels)
	require.NoError(t, err)
	return tg
}

func scaleSetTarget(t *testing.T, scope rm.Scope, group, name string) rm.ScaleTarget {
	t.Helper()
	tg, err := rm.NewScaleSetTarget(scope, group, name)
	require.NoError(t, err)
	return tg
}

func (e *fakeEnv) runner(name string) (fakegithub.RunnerRecord, bool) {
	for _, r := range e.fake.Runners() {
		if r.Name == name {
			return r, true
		}
	}
	return fakegithub.RunnerRecord{}, false
}

// remaining is the fake's REST budget left.
func (e *fakeEnv) remaining() int {
	_, rem, _ := e.fake.RateLimit()
	return rem
}

func waitCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// demandLog collects what Watch reports.
type demandLog struct {
	mu sync.Mutex
	d  []rm.Demand
}

func (l *demandLog) report(d rm.Demand) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, d)
}

func (l *demandLog) last() (rm.Demand, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return rm.Demand{}, false
	}
	return l.d[len(l.d)-1], true
}

func (l *demandLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d)
}

func (l *demandLog) events() []rm.JobEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rm.JobEvent
	for _, d := range l.d {
		out = append(out, d.Events...)
	}
	return out
}

func (l *demandLog) wanted(n int) func() bool {
	return func() bool {
		d, ok := l.last()
		return ok && d.Wanted == n
	}
}

// eventsOf returns the events of kind.
func eventsOf(evs []rm.JobEvent, kind rm.JobEventKind) []rm.JobEvent {
	return slices.DeleteFunc(slices.Clone(evs), func(e rm.JobEvent) bool { return e.Kind != kind })
}

// watcher is a target's demand side.
type watcher interface {
	Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error
}

// watch runs Watch in the background until the test ends and returns its
// demand log and a channel with its result.
func watch(t *testing.T, src watcher, capacity func() int) (*demandLog, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &demandLog{}
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- src.Watch(ctx, capacity, log.report)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Errorf("Watch did not return after its context ended")
		}
	})
	return log, done
}

func fixed(n int) func() int { return func() int { return n } }

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

var _ = http.StatusOK
