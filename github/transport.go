package github

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// limiter is the rate-limit state shared by every request of one Client:
// the core budget, secondary-limit holds per host, and the ETag cache.
type limiter struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	retry RetryPolicy
	log   *slog.Logger
	api   *url.URL
	etags *etagCache

	mu        sync.Mutex
	core      rm.Budget
	secondary map[string]time.Time // host → no request before
}

func newLimiter(cfg Config, api *url.URL) *limiter {
	l := &limiter{
		now:       cfg.Now,
		sleep:     cfg.Sleep,
		retry:     cfg.Retry,
		log:       cfg.Logger,
		api:       api,
		secondary: map[string]time.Time{},
	}
	if cfg.ETagCacheSize > 0 {
		l.etags = newETagCache(cfg.ETagCacheSize)
	}
	return l
}

func (l *limiter) budget() rm.Budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core
}

// secondaryHold is the latest time until which a secondary rate limit
// holds requests back, of any host; zero when none holds now.
func (l *limiter) secondaryHold() time.Time {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var until time.Time
	for _, t := range l.secondary {
		if t.After(now) && t.After(until) {
			until = t
		}
	}
	return until
}

// isREST reports whether req is a REST call counted against the core
// budget: under the API URL, and not the Actions service (whose paths hold
// "/_apis/"), which the scale-set client may reach on the same host.
func (l *limiter) isREST(req *http.Request) bool {
	if !strings.EqualFold(req.URL.Host, l.api.Host) || req.URL.Scheme != l.api.Scheme {
		return false
	}
	p := req.URL.Path
	return strings.HasPrefix(p, l.api.Path) && !strings.Contains(p, "/_apis/")
}

// free reports a call GitHub does not count: GET /rate_limit.
func (l *limiter) free(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/rate_limit")
}

// check refuses a request while a limit holds.
func (l *limiter) check(req *http.Request, rest bool) error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if until, ok := l.secondary[strings.ToLower(req.URL.Host)]; ok {
		if now.Before(until) {
			return &rm.RateLimitError{Reset: until, Secondary: true}
		}
		delete(l.secondary, strings.ToLower(req.URL.Host))
	}
	if rest && !l.free(req) && !l.core.SeenAt.IsZero() && l.core.Remaining <= 0 && now.Before(l.core.Reset) {
		return &rm.RateLimitError{Reset: l.core.Reset}
	}
	return nil
}

// observe reads the x-ratelimit-* headers of a core response into the budget.
func (l *limiter) observe(h http.Header) {
	limit, err := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	if err != nil {
		return
	}
	if r := strings.ToLower(h.Get("X-RateLimit-Resource")); r != "" && r != "core" {
		return
	}
	b := rm.Budget{Limit: limit, SeenAt: l.now()}
	b.Remaining, _ = strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	b.Used, _ = strconv.Atoi(h.Get("X-RateLimit-Used"))
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		b.Reset = time.Unix(reset, 0)
	}
	l.mu.Lock()
	l.core = b
	l.mu.Unlock()
}

// limited turns a 403/429 rate-limit answer into a RateLimitError and holds
// further requests until it lifts. A 403 that is not a rate limit (a
// missing permission) gives nil. body is the start of the response body.
func (l *limiter) limited(req *http.Request, resp *http.Response, body []byte) *rm.RateLimitError {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	now := l.now()
	h := resp.Header
	if ra := h.Get("Retry-After"); ra != "" {
		until := now.Add(time.Minute)
		if secs, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && secs >= 0 {
			until = now.Add(time.Duration(secs) * time.Second)
		} else if t, err := http.ParseTime(ra); err == nil {
			until = t
		}
		l.holdHost(req.URL.Host, until)
		return &rm.RateLimitError{Reset: until, Secondary: true}
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		until := now.Add(time.Minute)
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			until = time.Unix(reset, 0)
		}
		if r := strings.ToLower(h.Get("X-RateLimit-Resource")); r != "" && r != "core" {
			// Another resource (search, graphql): hold only this host's
			// calls briefly rather than the core budget.
			l.holdHost(req.URL.Host, until)
		}
		return &rm.RateLimitError{Reset: until}
	}
	lower := bytes.ToLower(body)
	if resp.StatusCode == http.StatusTooManyRequests || bytes.Contains(lower, []byte("secondary rate limit")) || bytes.Contains(lower, []byte("abuse")) {
		// GitHub: without retry-after, wait at least a minute.
		until := now.Add(time.Minute)
		l.holdHost(req.URL.Host, until)
		return &rm.RateLimitError{Reset: until, Secondary: true}
	}
	return nil
}

func (l *limiter) holdHost(host string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	host = strings.ToLower(host)
	if until.After(l.secondary[host]) {
		l.secondary[host] = until
	}
}

// limitTransport is the RoundTripper every request of a Client passes:
// it refuses while a rate limit holds, reads the budget from every answer,
// retries idempotent requests on 5xx and network errors with backoff, and
// revalidates cached GETs with If-None-Match (a 304 is served from the
// cache and costs no quota).
type limitTransport struct {
	lim  *limiter
	next http.RoundTripper
	// identity keys the ETag cache; with etags false nothing is cached
	// (requests that carry their own credentials).
	identity  string
	userAgent string
	etags     bool
}

const peekLimit = 64 << 10

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	rest := t.lim.isREST(req)
	idempotent := isIdempotent(req.Method) && (req.Body == nil || req.Body == http.NoBody || req.GetBody != nil)

	var key string
	var cached *etagEntry
	if t.etags && rest && t.lim.etags != nil && req.Method == http.MethodGet &&
		req.Header.Get("If-None-Match") == "" && req.Header.Get("Range") == "" {
		key = t.identity + "\x00" + req.Header.Get("Accept") + "\x00" + req.URL.String()
		cached = t.lim.etags.get(key)
	}

	for try := 0; ; try++ {
		record(ctx, nil, nil)
		recordRoute(ctx, req)
		if err := t.lim.check(req, rest); err != nil {
			closeBody(req)
			return nil, err
		}
		r := req.Clone(ctx)
		if try > 0 && req.GetBody != nil {
			b, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = b
		}
		if t.userAgent != "" && r.Header.Get("User-Agent") == "" {
			r.Header.Set("User-Agent", t.userAgent)
		}
		if cached != nil {
			r.Header.Set("If-None-Match", cached.etag)
		}
		last := try+1 >= t.lim.retry.Tries

		resp, err := t.next.RoundTrip(r)
		if err != nil {
			if ctx.Err() != nil || !idempotent || last {
				return nil, err
			}
			wait := t.lim.retry.backoff().Wait(try)
			t.lim.log.Log(ctx, t.lim.retry.level(), "GitHub request failed, retrying", "method", req.Method, "path", req.URL.Path, "err", err, "try", try+1, "wait", wait)
			if err := t.lim.sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		if rest {
			t.lim.observe(resp.Header)
		}
		var peek []byte
		if resp.StatusCode >= 400 {
			peek = peekBody(resp, peekLimit)
		}
		record(ctx, resp, peek)
		if rle := t.lim.limited(req, resp, peek); rle != nil {
			drain(resp)
			t.lim.log.Warn("GitHub rate limit", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "secondary", rle.Secondary, "until", rle.Reset)
			return nil, rle
		}
		if retryableStatus(resp.StatusCode) && idempotent && !last {
			drain(resp)
			wait := t.lim.retry.backoff().Wait(try)
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra >= 0 {
				wait = max(wait, min(time.Duration(ra)*time.Second, t.lim.retry.Cap))
			}
			t.lim.log.Log(ctx, t.lim.retry.level(), "GitHub answered a server error, retrying", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "try", try+1, "wait", wait)
			if err := t.lim.sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode == http.StatusNotModified && cached != nil {
			t.lim.etags.touch(key)
			drain(resp)
			return cached.response(req, resp.Header), nil
		}
		if key != "" && resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "" {
			t.lim.etags.store(key, resp)
		}
		return resp, nil
	}
}

func isIdempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodPut, http.MethodOptions:
		return true
	}
	return false
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// peekBody reads up to n bytes of the body and puts them back in front of
// the rest.
func peekBody(resp *http.Response, n int64) []byte {
	if resp.Body == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, n))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), errReader{err}), resp.Body}
	return b
}

type errReader struct{ err error }

func (e errReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

func drain(resp *http.Response) {
	if resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// The call recorder lets a caller learn the status, headers and start of
// the body (of an error) of the last answer of a call made through a library
// (actions/scaleset) whose errors keep only text.
type callRecordKey struct{}

type callRecord struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   []byte
	// credential: the last request's answer can carry a credential
	// (credentialRoute); its body and error text must not be printed.
	credential bool
}

func withCallRecord(ctx context.Context) (context.Context, *callRecord) {
	rec := &callRecord{}
	return context.WithValue(ctx, callRecordKey{}, rec), rec
}

func record(ctx context.Context, resp *http.Response, body []byte) {
	rec, _ := ctx.Value(callRecordKey{}).(*callRecord)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if resp == nil {
		rec.status, rec.header, rec.body = 0, nil, nil
		return
	}
	rec.status, rec.header, rec.body = resp.StatusCode, resp.Header.Clone(), bytes.Clone(body)
}

// recordRoute notes whether req's answer can carry a credential.
func recordRoute(ctx context.Context, req *http.Request) {
	rec, _ := ctx.Value(callRecordKey{}).(*callRecord)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.credential = credentialRoute(req.Method, req.URL.Path)
}

// credentialRoute reports whether the last request's answer can carry a
// credential: its body, and the error a library made of it, are then
// never printed.
func (r *callRecord) credentialRoute() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.credential
}

func (r *callRecord) last() (int, http.Header, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.header, r.body
}

// errors.Is helper: a RateLimitError anywhere in the chain.
func asRateLimit(err error) (*rm.RateLimitError, bool) {
	var rle *rm.RateLimitError
	if errors.As(err, &rle) {
		return rle, true
	}
	return nil, false
}
