package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
)

// adminConn is the Actions service's address and an admin token for one
// scope. actions/scaleset gets the same pair for itself but keeps it, and
// offers no call to delete a message session by id; we need one to remove
// a session a killed manager left behind, so the exchange is repeated here,
// through the Client's transports (rate limits, budget, call records).
// docs/github.md lists each call with what GitHub's own clients accept and
// retry; each call here does the same.
type adminConn struct {
	url   string // the Actions service base, ending in "/"
	token string // the admin JWT: a secret
}

// exchangeRetries is how many times the exchange's calls are tried again,
// as actions/scaleset does (v0.4.0 common_client.go:98-99, retryMax 4, and
// client.go:868-892 for runner-registration); exchangeWaitMax is its
// retryWaitMax (common_client.go:101-102, 30 s).
const (
	exchangeRetries = 4
	exchangeWaitMin = time.Second // go-retryablehttp's RetryWaitMin
	exchangeWaitMax = 30 * time.Second
)

// retryOn says which failures of one call are tried again.
type retryOn struct {
	server  bool // 5xx and network errors (the transport does not retry a POST)
	limit   bool // a rate limit that lifts within exchangeWaitMax (429, 403 with Retry-After)
	refused bool // 401 and 403 (runner-registration alone)
}

// adminConnection exchanges a registration token of scope (REST, with the
// Client's credentials) for an Actions service admin token:
// POST /actions/runner-registration with "RemoteAuth <token>".
func (c *Client) adminConnection(ctx context.Context, scope rm.Scope) (adminConn, error) {
	// POST {scope}/actions/runners/registration-token: actions/scaleset
	// retries 5xx, 429 and network errors (client.go:737-776, its
	// retryable client); go-github and actions/runner take any 2xx.
	action := "get a registration token for " + scope.String()
	var reg struct {
		Token string `json:"token"`
	}
	u := c.apiURL.String() + "/" + scope.Path() + "/actions/runners/registration-token"
	if err := c.retrying(ctx, action, retryOn{server: true, limit: true}, func() error {
		return c.sendJSON(ctx, c.rest, http.MethodPost, u, "", nil, &reg, action, scope)
	}); err != nil {
		return adminConn{}, err
	}
	if reg.Token == "" {
		return adminConn{}, fmt.Errorf("%s: GitHub answered without a token", action)
	}

	// POST /actions/runner-registration: any 2xx (actions/scaleset
	// client.go:894), 401 and 403 retried on top of 5xx, 429 and network
	// errors (client.go:874-879).
	action = "get an Actions service token for " + scope.String()
	body := map[string]string{"url": scope.ConfigURL(c.webURL.String()), "runner_event": "register"}
	var conn struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	raw := &http.Client{Transport: c.raw}
	if err := c.retrying(ctx, action, retryOn{server: true, limit: true, refused: true}, func() error {
		return c.sendJSON(ctx, raw, http.MethodPost, c.apiURL.String()+"/actions/runner-registration", "RemoteAuth "+reg.Token, body, &conn, action, scope)
	}); err != nil {
		return adminConn{}, err
	}
	if conn.URL == "" || conn.Token == "" {
		return adminConn{}, fmt.Errorf("%s: GitHub answered without the service URL or token", action)
	}
	if !strings.HasSuffix(conn.URL, "/") {
		conn.URL += "/"
	}
	return adminConn{url: conn.URL, token: conn.Token}, nil
}

// deleteSession deletes one message session of a scale set by its id,
// with a fresh admin token: nil when it is gone (2xx or 404).
func (c *Client) deleteSession(ctx context.Context, scope rm.Scope, scaleSetID int, sessionID string) error {
	conn, err := c.adminConnection(ctx, scope)
	if err != nil {
		return err
	}
	// DELETE …/sessions/{id}: actions/scaleset takes 204
	// (session_client.go:74-77) and retries 5xx, 429 and network errors;
	// the transport retries a DELETE's 5xx and network errors itself, so
	// only a short rate limit is waited out here.
	u := fmt.Sprintf("%s_apis/runtime/runnerscalesets/%d/sessions/%s?api-version=6.0-preview", conn.url, scaleSetID, url.PathEscape(sessionID))
	action := fmt.Sprintf("delete message session %s of scale set %d", sessionID, scaleSetID)
	raw := &http.Client{Transport: c.raw}
	err = c.retrying(ctx, action, retryOn{limit: true}, func() error {
		return c.sendJSON(ctx, raw, http.MethodDelete, u, "Bearer "+conn.token, nil, nil, action, scope)
	})
	if statusIs(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// retrying runs send until it succeeds, fails in a way on does not retry,
// or has been tried exchangeRetries more times, waiting between tries
// through the Client's Sleep as go-retryablehttp's DefaultBackoff does
// (1 s·2^n up to 30 s; a rate limit's own reset when sooner than 30 s).
// The last failure is returned as it is.
func (c *Client) retrying(ctx context.Context, action string, on retryOn, send func() error) error {
	for try := 0; ; try++ {
		err := send()
		if err == nil || try >= exchangeRetries || ctx.Err() != nil {
			return err
		}
		wait := backoff.Policy{Base: exchangeWaitMin, Cap: exchangeWaitMax}.Ceiling(try)
		var status int
		var se *httpStatusError
		if errors.As(err, &se) {
			status = se.status
		}
		rle, limited := asRateLimit(err)
		switch {
		case limited:
			until := rle.Reset.Sub(c.cfg.Now())
			if !on.limit || until > exchangeWaitMax {
				return err
			}
			wait = max(until, 0)
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			if !on.refused {
				return err
			}
		case status >= 500 && status != http.StatusNotImplemented, isNetError(err):
			if !on.server {
				return err
			}
		default:
			return err
		}
		// The error names the status and a fixed text, never a body.
		c.log.Log(ctx, c.cfg.Retry.level(), "GitHub call failed, retrying", "action", action, "err", err, "try", try+1, "wait", wait)
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
	}
}

// httpStatusError is an answer of sendJSON that is not a 2xx.
type httpStatusError struct {
	status int
	err    error
}

func (e *httpStatusError) Error() string { return e.err.Error() }
func (e *httpStatusError) Unwrap() error { return e.err }

func statusIs(err error, status int) bool {
	var se *httpStatusError
	return errors.As(err, &se) && se.status == status
}

// netError is a request of sendJSON that got no answer.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

func isNetError(err error) bool {
	var ne *netError
	return errors.As(err, &ne)
}

// sendJSON sends one request with an optional JSON body and decodes the
// JSON of a 2xx answer into out, as every GitHub client takes any 2xx of
// these routes. auth, when set, is the Authorization header (hc then must
// not add its own). Errors are mapped as every call of this package is
// (rate limits, ErrUnauthorized, ErrNotFound); none holds a credential: the
// answer of a credential route (credentialRoute) is never quoted, not even
// GitHub's message, and a decoding error never quotes JSON.
func (c *Client) sendJSON(ctx context.Context, hc *http.Client, method, u, auth string, in any, out any, action string, scope rm.Scope) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := hc.Do(req)
	if err != nil {
		if rle, ok := asRateLimit(err); ok {
			return fmt.Errorf("%s: %w", action, rle)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", action, ctx.Err())
		}
		// A url.Error names the URL, which holds no secret here.
		return &netError{fmt.Errorf("%s: %w", action, err)}
	}
	defer drain(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := ""
		if !credentialRoute(method, req.URL.Path) {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, peekLimit))
			_, msg = actionsMessage(b)
		}
		if mapped := statusError(resp.StatusCode, resp.Header, msg, action, scope); mapped != nil {
			return &httpStatusError{status: resp.StatusCode, err: mapped}
		}
		if msg == "" {
			return &httpStatusError{status: resp.StatusCode, err: fmt.Errorf("%s: GitHub answered %s", action, resp.Status)}
		}
		return &httpStatusError{status: resp.StatusCode, err: fmt.Errorf("%s: GitHub answered %s: %s", action, resp.Status, msg)}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		// encoding/json's errors name types and offsets, never values.
		return fmt.Errorf("%s: GitHub's answer (%s) is not the JSON expected: %w", action, resp.Status, err)
	}
	return nil
}
