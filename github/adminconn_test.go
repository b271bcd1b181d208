package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The secrets of the exchange tests: none may reach an error or the log.
const (
	xPAT      = "ghp_exchangePATnotForPrinting000000000"
	xRegToken = "AREGTOKENnotForPrinting0000000000"
	xAdmin    = "eyJhbGciOiJSUzI1NiJ9.eyJhZG1pbiI6dHJ1ZX0.adminSIGNATUREnotForPrinting"
)

// The routes of the hand-written exchange (docs/github.md).
const (
	xRegistrationToken  = "registration-token"
	xRunnerRegistration = "runner-registration"
	xDeleteSession      = "delete-session"
)

// drop is a scripted answer that closes the connection unanswered.
const drop = -1

// exchangeServer answers the three calls of Client.DeleteSession over
// loopback: each route answers its script of statuses in turn, then ok
// forever. A failing answer of a credential route carries the credential
// in its body, as a client that took a success for a failure would see it.
type exchangeServer struct {
	*httptest.Server
	mu     sync.Mutex
	script map[string][]int
	ok     map[string]int
	calls  map[string]int
}

func newExchangeServer(t *testing.T, ok, script map[string][]int) *exchangeServer {
	t.Helper()
	s := &exchangeServer{script: map[string][]int{}, ok: map[string]int{}, calls: map[string]int{}}
	for r, st := range script {
		s.script[r] = st
	}
	for r, st := range ok {
		s.ok[r] = st[0]
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *exchangeServer) serve(w http.ResponseWriter, r *http.Request) {
	var route string
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/repos/"+fakeRepo+"/actions/runners/registration-token":
		route = xRegistrationToken
		if r.Header.Get("Authorization") != "Bearer "+xPAT {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
	case r.Method == http.MethodPost && r.URL.Path == "/actions/runner-registration":
		route = xRunnerRegistration
		if r.Header.Get("Authorization") != "RemoteAuth "+xRegToken {
			http.Error(w, `{"message":"bad registration token"}`, http.StatusBadRequest)
			return
		}
	case r.Method == http.MethodDelete && r.URL.Path == "/tenant/_apis/runtime/runnerscalesets/7/sessions/sid-1":
		route = xDeleteSession
		if r.Header.Get("Authorization") != "Bearer "+xAdmin {
			http.Error(w, `{"message":"bad admin token"}`, http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, "no such route", http.StatusTeapot)
		return
	}
	s.mu.Lock()
	s.calls[route]++
	status := s.ok[route]
	if len(s.script[route]) > 0 {
		status, s.script[route] = s.script[route][0], s.script[route][1:]
	}
	s.mu.Unlock()
	if status == drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	var body any
	switch route {
	case xRegistrationToken:
		body = map[string]string{"token": xRegToken, "expires_at": "2026-12-01T00:00:00Z", "message": "token " + xRegToken}
	case xRunnerRegistration:
		body = map[string]string{"url": s.URL + "/tenant", "token": xAdmin, "token_schema": "OAuthAccessToken", "message": "token " + xAdmin}
	case xDeleteSession:
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		body = map[string]string{"typeName": "SomeException", "message": "the service said no"}
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "3")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *exchangeServer) callsOf(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// fakeClock is the Client's Now and Sleep: a sleep moves it on at once.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) all() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// TestExchangeStatuses drives Client.DeleteSession (registration token,
// runner-registration, session DELETE) against every answer GitHub's own
// clients accept of each call, and failures once (retried where GitHub's
// clients retry them) and always (one clear error): the statuses, the
// retries and the waits are those of docs/github.md, and no credential
// reaches the error or the log.
func TestExchangeStatuses(t *testing.T) {
	t.Parallel()
	ok := map[string][]int{xRegistrationToken: {201}, xRunnerRegistration: {201}, xDeleteSession: {204}}
	five := func(code int) []int { return []int{code, code, code, code, code, code, code, code} }
	for _, tc := range []struct {
		name   string
		ok     map[string][]int // replaces ok's entry of a route
		script map[string][]int
		// want: nil for success, else the error must match.
		want  func(*testing.T, error)
		calls map[string]int  // the requests each route got
		waits []time.Duration // the Client's sleeps, in order; nil: not checked
		noLog bool            // nothing logged at WARN or above
	}{
		// What GitHub's clients accept.
		{name: "registration-token 201", noLog: true, calls: map[string]int{xRegistrationToken: 1, xRunnerRegistration: 1, xDeleteSession: 1}},
		{name: "registration-token 200", ok: map[string][]int{xRegistrationToken: {200}}, calls: map[string]int{xRegistrationToken: 1}},
		{name: "runner-registration 200", ok: map[string][]int{xRunnerRegistration: {200}}, calls: map[string]int{xRunnerRegistration: 1}},
		{name: "runner-registration 201", calls: map[string]int{xRunnerRegistration: 1}},
		{name: "runner-registration 202", ok: map[string][]int{xRunnerRegistration: {202}}, calls: map[string]int{xRunnerRegistration: 1}},
		{name: "delete-session 204", calls: map[string]int{xDeleteSession: 1}},
		{name: "delete-session 200", ok: map[string][]int{xDeleteSession: {200}}, calls: map[string]int{xDeleteSession: 1}},
		{name: "delete-session 202", ok: map[string][]int{xDeleteSession: {202}}, calls: map[string]int{xDeleteSession: 1}},
		{name: "delete-session 404 is gone", ok: map[string][]int{xDeleteSession: {404}}, calls: map[string]int{xDeleteSession: 1}},

		// runner-registration: 401, 403, 5xx, 429 and network errors are
		// retried, up to 4 times, 1 s·2^n apart (a rate limit: its own wait).
		{name: "runner-registration 401 four times", script: map[string][]int{xRunnerRegistration: {401, 401, 401, 401}},
			calls: map[string]int{xRunnerRegistration: 5}, waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{name: "runner-registration 403 once", script: map[string][]int{xRunnerRegistration: {403}}, calls: map[string]int{xRunnerRegistration: 2}, waits: []time.Duration{time.Second}},
		{name: "runner-registration 500 once", script: map[string][]int{xRunnerRegistration: {500}}, calls: map[string]int{xRunnerRegistration: 2}, waits: []time.Duration{time.Second}},
		{name: "runner-registration 429 once", script: map[string][]int{xRunnerRegistration: {429}}, calls: map[string]int{xRunnerRegistration: 2}, waits: []time.Duration{3 * time.Second}},
		{name: "runner-registration dropped once", script: map[string][]int{xRunnerRegistration: {drop}}, calls: map[string]int{xRunnerRegistration: 2}, waits: []time.Duration{time.Second}},
		{name: "runner-registration 401 always", script: map[string][]int{xRunnerRegistration: five(401)}, calls: map[string]int{xRunnerRegistration: 5, xDeleteSession: 0},
			want: isErr(rm.ErrUnauthorized, "get an Actions service token for repo:"+fakeRepo), waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{name: "runner-registration 403 always", script: map[string][]int{xRunnerRegistration: five(403)}, calls: map[string]int{xRunnerRegistration: 5},
			want: isErr(rm.ErrUnauthorized, "get an Actions service token")},
		{name: "runner-registration 500 always", script: map[string][]int{xRunnerRegistration: five(500)}, calls: map[string]int{xRunnerRegistration: 5},
			want: isErr(nil, "get an Actions service token for repo:"+fakeRepo+": GitHub answered 500 Internal Server Error")},
		{name: "runner-registration 429 always", script: map[string][]int{xRunnerRegistration: five(429)}, calls: map[string]int{xRunnerRegistration: 5},
			want: isRateLimit("get an Actions service token")},
		{name: "runner-registration 400 not retried", script: map[string][]int{xRunnerRegistration: {400}}, calls: map[string]int{xRunnerRegistration: 1},
			want: isErr(nil, "GitHub answered 400 Bad Request"), waits: []time.Duration{}},

		// registration-token: 5xx, 429 and network errors retried
		// (actions/scaleset); 401 and 403 are not.
		{name: "registration-token 500 once", script: map[string][]int{xRegistrationToken: {500}}, calls: map[string]int{xRegistrationToken: 2}, waits: []time.Duration{time.Second}},
		{name: "registration-token 429 once", script: map[string][]int{xRegistrationToken: {429}}, calls: map[string]int{xRegistrationToken: 2}, waits: []time.Duration{3 * time.Second}},
		{name: "registration-token dropped once", script: map[string][]int{xRegistrationToken: {drop}}, calls: map[string]int{xRegistrationToken: 2}},
		{name: "registration-token 401", script: map[string][]int{xRegistrationToken: {401}}, calls: map[string]int{xRegistrationToken: 1, xRunnerRegistration: 0},
			want: isErr(rm.ErrUnauthorized, "get a registration token for repo:"+fakeRepo), waits: []time.Duration{}},
		{name: "registration-token 403", script: map[string][]int{xRegistrationToken: {403}}, calls: map[string]int{xRegistrationToken: 1},
			want: isErr(rm.ErrUnauthorized, "get a registration token")},
		{name: "registration-token 502 always", script: map[string][]int{xRegistrationToken: five(502)}, calls: map[string]int{xRegistrationToken: 5},
			want: isErr(nil, "GitHub answered 502 Bad Gateway")},

		// delete-session: the transport retries a DELETE's 5xx (4 tries in
		// all); a short rate limit is waited out; 401 is not retried.
		{name: "delete-session 500 once", script: map[string][]int{xDeleteSession: {500}}, calls: map[string]int{xDeleteSession: 2}},
		{name: "delete-session 429 once", script: map[string][]int{xDeleteSession: {429}}, calls: map[string]int{xDeleteSession: 2}, waits: []time.Duration{3 * time.Second}},
		{name: "delete-session 500 always", script: map[string][]int{xDeleteSession: five(500)}, calls: map[string]int{xDeleteSession: 4},
			want: isErr(nil, "delete message session sid-1 of scale set 7: GitHub answered 500 Internal Server Error: the service said no")},
		{name: "delete-session 401", script: map[string][]int{xDeleteSession: {401}}, calls: map[string]int{xDeleteSession: 1},
			want: isErr(rm.ErrUnauthorized, "delete message session sid-1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			routes := map[string][]int{}
			for r, st := range ok {
				routes[r] = st
			}
			for r, st := range tc.ok {
				routes[r] = st
			}
			srv := newExchangeServer(t, routes, tc.script)
			logs := &logBuffer{}
			clock := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			c, err := github.New(github.Config{
				WebURL: srv.URL, APIURL: srv.URL, Token: xPAT,
				Logger: newTextLogger(logs), Now: clock.Now, Sleep: clock.Sleep,
			})
			require.NoError(t, err)
			scope, err := rm.Repository(fakeRepo)
			require.NoError(t, err)

			err = c.DeleteSession(t.Context(), scope, 7, "sid-1")
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				tc.want(t, err)
			}
			for route, n := range tc.calls {
				assert.Equal(t, n, srv.callsOf(route), "requests of %s", route)
			}
			if tc.waits != nil {
				assert.Equal(t, tc.waits, append([]time.Duration{}, clock.all()...), "the waits")
			}
			text := logs.String()
			if err != nil {
				text += "\n" + fmt.Sprintf("%v %+v", err, err)
			}
			for _, secret := range []string{xPAT, xRegToken, xAdmin, xAdmin[:16]} {
				assert.NotContains(t, text, secret, "a credential was printed")
			}
			if tc.noLog {
				assert.NotContains(t, logs.String(), "level=WARN")
			}
		})
	}
}

// isErr checks an error is target (when set) and holds text.
func isErr(target error, text string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if target != nil {
			assert.ErrorIs(t, err, target)
		}
		assert.Contains(t, err.Error(), text)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}

func isRateLimit(text string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var rle *rm.RateLimitError
		assert.True(t, errors.As(err, &rle), "a *RateLimitError: %v", err)
		assert.Contains(t, err.Error(), text)
	}
}

// TestExchangeFailureQuotesNoCredentialBody: a credential route's error
// body is never quoted, but another route's message is (it helps).
func TestExchangeFailureQuotesNoCredentialBody(t *testing.T) {
	t.Parallel()
	srv := newExchangeServer(t, map[string][]int{xRegistrationToken: {201}, xRunnerRegistration: {201}, xDeleteSession: {204}},
		map[string][]int{xRunnerRegistration: {418}})
	c, err := github.New(github.Config{WebURL: srv.URL, APIURL: srv.URL, Token: xPAT})
	require.NoError(t, err)
	scope, err := rm.Repository(fakeRepo)
	require.NoError(t, err)
	err = c.DeleteSession(t.Context(), scope, 7, "sid-1")
	require.Error(t, err)
	assert.Equal(t, "get an Actions service token for repo:"+fakeRepo+": GitHub answered 418 I'm a teapot", err.Error())
	assert.NotContains(t, err.Error(), "token eyJ", "GitHub's message of a credential route is not quoted")
}
