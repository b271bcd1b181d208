package github_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secretToken = "ghp_S3CRETt0kenNeverPrinted0123456789"

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// sleeps records the waits asked of Config.Sleep without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// api is a small REST server for transport tests: it counts requests and
// answers with fn.
type api struct {
	*httptest.Server
	calls atomic.Int64
}

func newAPI(t *testing.T, fn http.HandlerFunc) *api {
	t.Helper()
	a := &api{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		fn(w, r)
	}))
	t.Cleanup(a.Close)
	return a
}

// newClient returns a Client whose API is a's root, with a recorded sleep,
// a settable clock, and logs captured in logs.
func newClient(t *testing.T, a *api, clk *clock, sl *sleeps, logs *bytes.Buffer) *github.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	cfg := github.Config{
		WebURL: a.URL, APIURL: a.URL, Token: secretToken, Transport: tr,
		Now: clk.Now, Sleep: sl.Sleep,
	}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := github.New(cfg)
	require.NoError(t, err)
	return c
}

func get(t *testing.T, c *github.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	return do(t, c, http.MethodGet, url)
}

func do(t *testing.T, c *github.Client, method, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	require.NoError(t, err)
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b, nil
}

func rateHeaders(w http.ResponseWriter, limit, remaining int, reset time.Time) {
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(limit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Used", strconv.Itoa(limit-remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("X-RateLimit-Resource", "core")
}

func TestBudget(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(30 * time.Minute)
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		rateHeaders(w, 5000, 4321, reset)
		_, _ = io.WriteString(w, "{}")
	})
	c := newClient(t, a, clk, &sleeps{}, nil)
	assert.True(t, c.Budget().SeenAt.IsZero(), "no budget before any answer")

	_, _, err := get(t, c, a.URL+"/repos/o/r")
	require.NoError(t, err)
	b := c.Budget()
	assert.Equal(t, 5000, b.Limit)
	assert.Equal(t, 4321, b.Remaining)
	assert.Equal(t, 679, b.Used)
	assert.True(t, b.Reset.Equal(reset), "reset %v, want %v", b.Reset, reset)
	assert.Equal(t, clk.Now(), b.SeenAt)
}

func TestExhaustedBudgetSendsNothingUntilReset(t *testing.T) {
	clk := newClock()
	reset := clk.Now().Add(10 * time.Minute)
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		rateHeaders(w, 5000, 0, reset)
		_, _ = io.WriteString(w, "{}")
	})
	c := newClient(t, a, clk, &sleeps{}, nil)

	// The last allowed call answers with remaining 0.
	_, _, err := get(t, c, a.URL+"/repos/o/r/actions/runners")
	require.NoError(t, err)
	require.EqualValues(t, 1, a.calls.Load())

	for range 3 {
		_, _, err = get(t, c, a.URL+"/repos/o/r/actions/runners")
		var rle *rm.RateLimitError
		require.ErrorAs(t, err, &rle)
		assert.False(t, rle.Secondary)
		assert.True(t, rle.Reset.Equal(reset))
		_, _, err = do(t, c, http.MethodPost, a.URL+"/repos/o/r/actions/runners/generate-jitconfig")
		require.ErrorAs(t, err, &rle)
	}
	assert.EqualValues(t, 1, a.calls.Load(), "no request may be sent while the budget is exhausted")

	// GET /rate_limit is free and still allowed.
	_, _, err = get(t, c, a.URL+"/rate_limit")
	require.NoError(t, err)
	assert.EqualValues(t, 2, a.calls.Load())

	clk.Add(10*time.Minute + time.Second)
	_, _, err = get(t, c, a.URL+"/repos/o/r/actions/runners")
	require.NoError(t, err)
	assert.EqualValues(t, 3, a.calls.Load(), "requests resume after the reset")
}

func TestRateLimitAnswers(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		headers   map[string]string
		body      string
		secondary bool
		hold      time.Duration // how long further requests are refused
	}{
		{"SecondaryRetryAfter403", 403, map[string]string{"Retry-After": "90"}, `{"message":"You have exceeded a secondary rate limit"}`, true, 90 * time.Second},
		{"SecondaryRetryAfter429", 429, map[string]string{"Retry-After": "5"}, `{}`, true, 5 * time.Second},
		{"Secondary429NoHeader", 429, nil, `{}`, true, time.Minute},
		{"SecondaryMessageOnly", 403, nil, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes"}`, true, time.Minute},
		{"Primary403", 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": "+120"}, `{"message":"API rate limit exceeded"}`, false, 120 * time.Second},
		{"Primary429", 429, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": "+60"}, `{}`, false, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			var fail atomic.Bool
			fail.Store(true)
			a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if !fail.Load() {
					_, _ = io.WriteString(w, "{}")
					return
				}
				for k, v := range tt.headers {
					if rel, ok := strings.CutPrefix(v, "+"); ok {
						s, _ := strconv.Atoi(rel)
						v = strconv.FormatInt(clk.Now().Add(time.Duration(s)*time.Second).Unix(), 10)
					}
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			c := newClient(t, a, clk, &sleeps{}, nil)

			_, _, err := get(t, c, a.URL+"/repos/o/r")
			var rle *rm.RateLimitError
			require.ErrorAs(t, err, &rle)
			assert.Equal(t, tt.secondary, rle.Secondary)
			assert.WithinDuration(t, clk.Now().Add(tt.hold), rle.Reset, 0)
			require.EqualValues(t, 1, a.calls.Load(), "a rate limit is not retried")

			fail.Store(false)
			clk.Add(tt.hold - time.Second)
			_, _, err = get(t, c, a.URL+"/repos/o/r")
			require.ErrorAs(t, err, &rle, "refused until the limit lifts")
			assert.EqualValues(t, 1, a.calls.Load())

			clk.Add(2 * time.Second)
			_, _, err = get(t, c, a.URL+"/repos/o/r")
			require.NoError(t, err)
			assert.EqualValues(t, 2, a.calls.Load())
		})
	}
}

func TestForbiddenIsNotARateLimit(t *testing.T) {
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Accepted-GitHub-Permissions", "administration=write")
		rateHeaders(w, 5000, 4999, time.Now().Add(time.Hour))
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"Resource not accessible by personal access token"}`)
	})
	c := newClient(t, a, newClock(), &sleeps{}, nil)
	resp, body, err := get(t, c, a.URL+"/repos/o/r/actions/runners")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(body), "Resource not accessible", "the body is given back whole")
	_, _, err = get(t, c, a.URL+"/repos/o/r/actions/runners")
	require.NoError(t, err, "a permission error holds nothing")
	assert.EqualValues(t, 2, a.calls.Load())
}

func TestServerErrorStorm(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		failures  int64
		wantCalls int64
		wantCode  int
	}{
		{"GETSurvives", http.MethodGet, 3, 4, 200},
		{"GETGivesUp", http.MethodGet, 10, 4, 503},
		{"DELETESurvives", http.MethodDelete, 2, 3, 200},
		{"POSTNotRetried", http.MethodPost, 3, 1, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= tt.failures {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				_, _ = io.WriteString(w, "{}")
			})
			sl := &sleeps{}
			c := newClient(t, a, newClock(), sl, nil)
			resp, _, err := do(t, c, tt.method, a.URL+"/repos/o/r/actions/runners/1")
			require.NoError(t, err)
			assert.Equal(t, tt.wantCode, resp.StatusCode)
			assert.Equal(t, tt.wantCalls, a.calls.Load())
			waits := sl.all()
			require.Len(t, waits, int(tt.wantCalls-1))
			for i, d := range waits {
				ceiling := min(200*time.Millisecond<<i, 5*time.Second)
				assert.GreaterOrEqual(t, d, ceiling/2, "wait %d", i)
				assert.LessOrEqual(t, d, ceiling, "wait %d", i)
			}
		})
	}
}

func TestDroppedConnections(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		wantCalls int64
		wantErr   bool
	}{
		{"GETSurvives", http.MethodGet, 3, false},
		{"POSTNotRetried", http.MethodPost, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= 2 {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						_ = conn.Close()
					}
					return
				}
				_, _ = io.WriteString(w, "{}")
			})
			c := newClient(t, a, newClock(), &sleeps{}, nil)
			resp, _, err := do(t, c, tt.method, a.URL+"/repos/o/r/actions/runners/generate-jitconfig")
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, 200, resp.StatusCode)
			}
			assert.Equal(t, tt.wantCalls, a.calls.Load())
		})
	}
}

func TestETagRevalidation(t *testing.T) {
	clk := newClock()
	var remaining atomic.Int64
	remaining.Store(100)
	var version atomic.Int64
	var notModified atomic.Int64
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		etag := fmt.Sprintf(`"v%d"`, version.Load())
		if r.Header.Get("If-None-Match") == etag {
			notModified.Add(1)
			rateHeaders(w, 100, int(remaining.Load()), clk.Now().Add(time.Hour))
			w.WriteHeader(http.StatusNotModified)
			return
		}
		rateHeaders(w, 100, int(remaining.Add(-1)), clk.Now().Add(time.Hour))
		w.Header().Set("ETag", etag)
		fmt.Fprintf(w, `{"version":%d}`, version.Load())
	})
	c := newClient(t, a, clk, &sleeps{}, nil)
	url := a.URL + "/repos/o/r/actions/runs?status=queued"

	resp, body, err := get(t, c, url)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":0}`, string(body))
	assert.Empty(t, resp.Header.Get("X-From-Cache"))
	assert.Equal(t, 99, c.Budget().Remaining)

	for range 3 {
		resp, body, err = get(t, c, url)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode, "a 304 is served from the cache as the 200 it revalidated")
		assert.JSONEq(t, `{"version":0}`, string(body))
		assert.Equal(t, "1", resp.Header.Get("X-From-Cache"))
	}
	assert.EqualValues(t, 3, notModified.Load())
	assert.Equal(t, 99, c.Budget().Remaining, "revalidations cost no budget")

	version.Store(1)
	_, body, err = get(t, c, url)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":1}`, string(body), "a changed resource is fetched anew")
	assert.Equal(t, 98, c.Budget().Remaining)
}

func TestTokenOnlyToAPIHost(t *testing.T) {
	var gotOther atomic.Value
	other := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		gotOther.Store(r.Header.Get("Authorization"))
	})
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secretToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, other.URL+"/download.tar.gz", http.StatusFound)
	})
	c := newClient(t, a, newClock(), &sleeps{}, nil)
	resp, _, err := get(t, c, a.URL+"/repos/o/r/tarball")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "", gotOther.Load(), "the token must not follow a redirect to another host")
}

func TestTokenNeverPrinted(t *testing.T) {
	var n atomic.Int64
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 1:
			w.WriteHeader(http.StatusBadGateway)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusForbidden)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
		}
	})
	var logs bytes.Buffer
	clk := newClock()
	c := newClient(t, a, clk, &sleeps{}, &logs)
	var errs []string
	for range 6 {
		clk.Add(2 * time.Second)
		resp, body, err := get(t, c, a.URL+"/repos/o/r/actions/runners")
		if err != nil {
			errs = append(errs, err.Error(), fmt.Sprintf("%+v %#v", err, err))
		} else {
			errs = append(errs, string(body), fmt.Sprint(resp.Header))
		}
	}
	require.NotEmpty(t, logs.String(), "the failures were logged")
	assert.NotContains(t, logs.String(), secretToken)
	assert.NotContains(t, strings.Join(errs, "\n"), secretToken)
}

func TestNewRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  github.Config
		want string
	}{
		{"NoCredentials", github.Config{}, "no credentials"},
		{"Both", github.Config{Token: "x", App: &github.App{AppID: 1, InstallationID: 2, PrivateKeyPEM: []byte("k")}}, "not both"},
		{"AppNoInstallation", github.Config{App: &github.App{AppID: 1, PrivateKeyPEM: []byte("k")}}, "installation id"},
		{"AppNoKey", github.Config{App: &github.App{ClientID: "Iv1.abc", InstallationID: 2}}, "private key"},
		{"AppBadKey", github.Config{App: &github.App{AppID: 1, InstallationID: 2, PrivateKeyPEM: []byte("not a key")}}, "not an RSA PEM key"},
		{"BadURL", github.Config{Token: "x", WebURL: "github.com"}, "http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := github.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestAPIURLDerived(t *testing.T) {
	tests := []struct{ web, want string }{
		{"", "https://api.github.com"},
		{"https://github.com", "https://api.github.com"},
		{"https://github.example.com/", "https://github.example.com/api/v3"},
		{"https://acme.ghe.com", "https://api.acme.ghe.com"},
	}
	for _, tt := range tests {
		t.Run(tt.web, func(t *testing.T) {
			c, err := github.New(github.Config{WebURL: tt.web, Token: "x"})
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.APIURL())
		})
	}
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
