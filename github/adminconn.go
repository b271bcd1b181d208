package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// adminConn is the Actions service's address and an admin token for one
// scope. actions/scaleset gets the same pair for itself but keeps it, and
// offers no call to delete a message session by id; we need one to remove
// a session a killed manager left behind, so the exchange is repeated here,
// through the Client's transports (rate limits, budget, call records).
type adminConn struct {
	url   string // the Actions service base, ending in "/"
	token string // the admin JWT: a secret
}

// adminConnection exchanges a registration token of scope (REST, with the
// Client's credentials) for an Actions service admin token:
// POST /actions/runner-registration with "RemoteAuth <token>".
func (c *Client) adminConnection(ctx context.Context, scope rm.Scope) (adminConn, error) {
	action := "get a registration token for " + scope.String()
	var reg struct {
		Token string `json:"token"`
	}
	if err := c.sendJSON(ctx, c.rest, http.MethodPost, c.apiURL.String()+"/"+scope.Path()+"/actions/runners/registration-token", "", nil, http.StatusCreated, &reg, action, scope); err != nil {
		return adminConn{}, err
	}
	if reg.Token == "" {
		return adminConn{}, fmt.Errorf("%s: GitHub answered without a token", action)
	}
	action = "get an Actions service token for " + scope.String()
	body := map[string]string{"url": scope.ConfigURL(c.webURL.String()), "runner_event": "register"}
	var conn struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	if err := c.sendJSON(ctx, &http.Client{Transport: c.raw}, http.MethodPost, c.apiURL.String()+"/actions/runner-registration", "RemoteAuth "+reg.Token, body, http.StatusOK, &conn, action, scope); err != nil {
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
// with a fresh admin token: nil when it is gone (204 or 404).
func (c *Client) deleteSession(ctx context.Context, scope rm.Scope, scaleSetID int, sessionID string) error {
	conn, err := c.adminConnection(ctx, scope)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s_apis/runtime/runnerscalesets/%d/sessions/%s?api-version=6.0-preview", conn.url, scaleSetID, url.PathEscape(sessionID))
	action := fmt.Sprintf("delete message session %s of scale set %d", sessionID, scaleSetID)
	err = c.sendJSON(ctx, &http.Client{Transport: c.raw}, http.MethodDelete, u, "Bearer "+conn.token, nil, http.StatusNoContent, nil, action, scope)
	if statusIs(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// httpStatusError is an unexpected answer of sendJSON.
type httpStatusError struct {
	status int
	err    error
}

func (e *httpStatusError) Error() string { return e.err.Error() }
func (e *httpStatusError) Unwrap() error { return e.err }

func statusIs(err error, status int) bool {
	se, ok := err.(*httpStatusError)
	return ok && se.status == status
}

// sendJSON sends one request with an optional JSON body and decodes a JSON
// answer of status want into out. auth, when set, is the Authorization
// header (hc then must not add its own). Errors are mapped as every call of
// this package is (rate limits, ErrUnauthorized, ErrNotFound); none holds
// a credential.
func (c *Client) sendJSON(ctx context.Context, hc *http.Client, method, u, auth string, in any, want int, out any, action string, scope rm.Scope) error {
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
		return fmt.Errorf("%s: %w", action, err)
	}
	defer drain(resp)
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, peekLimit))
		_, msg := actionsMessage(b)
		if mapped := statusError(resp.StatusCode, resp.Header, msg, action, scope); mapped != nil {
			return &httpStatusError{status: resp.StatusCode, err: mapped}
		}
		return &httpStatusError{status: resp.StatusCode, err: fmt.Errorf("%s: GitHub answered %s: %s", action, resp.Status, msg)}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: GitHub's answer is not the JSON expected: %w", action, err)
	}
	return nil
}
