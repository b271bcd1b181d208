package fakerunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// errGone: the service no longer knows this runner.
var errGone = errors.New("the runner registration is gone")

// serviceError is a refusal from the service.
type serviceError struct {
	status int
	ex     runnerproto.Exception
}

func (e *serviceError) Error() string {
	return fmt.Sprintf("service answered %d %s: %s", e.status, e.ex.TypeName, e.ex.Message)
}

func (l *listener) url(path string) string {
	return strings.TrimRight(l.runner.ServerURL, "/") + "/_apis/distributedtask/pools/" + strconv.FormatInt(l.runner.PoolID, 10) + path
}

func (l *listener) authenticate(ctx context.Context) error {
	now := time.Now()
	assertion, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Subject: l.creds.Data.ClientID, Issuer: l.creds.Data.ClientID, Audience: jwt.ClaimStrings{l.creds.Data.AuthorizationURL},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	}).SignedString(l.key)
	if err != nil {
		return &serviceError{ex: runnerproto.Exception{TypeName: runnerproto.ExInvalidCredentials, Message: err.Error()}}
	}
	form := url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {assertion},
	}
	var tok runnerproto.TokenResponse
	status, err := l.do(ctx, http.MethodPost, l.creds.Data.AuthorizationURL, "application/x-www-form-urlencoded", []byte(form.Encode()), false, &tok)
	switch {
	case err != nil:
		return err
	case status == http.StatusUnauthorized || status == http.StatusBadRequest:
		return fmt.Errorf("%w: the token exchange was refused", errGone)
	}
	l.token = tok.AccessToken
	return nil
}

func (l *listener) openSession(ctx context.Context) error {
	body, _ := json.Marshal(runnerproto.SessionRequest{OwnerName: l.hostname, Agent: runnerproto.Agent{
		ID: l.runner.AgentID, Name: l.runner.AgentName, Version: l.cfg.Version, OSDescription: runtime.GOOS + " " + runtime.GOARCH,
	}})
	var se runnerproto.Session
	if _, err := l.do(ctx, http.MethodPost, l.url("/sessions"), "application/json", body, true, &se); err != nil {
		return err
	}
	l.session = se.SessionID
	return nil
}

func (l *listener) closeSession() {
	if l.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = l.do(ctx, http.MethodDelete, l.url("/sessions/"+l.session), "", nil, true, nil)
	l.session = ""
}

// finish reports the job's result, even when ctx was canceled (a stopped
// runner still says how its job ended).
func (l *listener) finish(ctx context.Context, base, result string) error {
	return l.finishWith(ctx, base, runnerproto.Finish{Result: result})
}

// finishWith reports the job's end with its log and step summary.
func (l *listener) finishWith(ctx context.Context, base string, f runnerproto.Finish) error {
	body, _ := json.Marshal(f)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.GiveUpAfter)
	defer cancel()
	_, err := l.do(fctx, http.MethodPost, l.url(base+"/finish"), "application/json", body, true, nil)
	return err
}

// renew keeps the job's lock; when the server says the job is no longer
// ours it closes lost and cancels the work.
func (l *listener) renew(ctx context.Context, base string, every time.Duration, lost chan struct{}, cancel func()) {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := l.do(ctx, http.MethodPost, l.url(base+"/renew"), "application/json", []byte("{}"), true, nil)
		var se *serviceError
		if errors.Is(err, errGone) || errors.As(err, &se) && se.status == http.StatusNotFound {
			// The job, or the whole registration, is gone.
			close(lost)
			cancel()
			return
		}
	}
}

// do sends a request, retrying connection failures and 5xx with backoff
// for up to GiveUpAfter. It decodes a 200 into out, returns a serviceError
// for a 4xx (errGone for an unknown runner), and the status otherwise.
func (l *listener) do(ctx context.Context, method, u, ctype string, body []byte, auth bool, out any) (int, error) {
	deadline := time.Now().Add(l.cfg.GiveUpAfter)
	wait := 100 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "GitHubActionsRunner-fake/"+l.cfg.Version)
		if auth {
			req.Header.Set("Authorization", "Bearer "+l.token)
		}
		resp, err := l.hc.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode >= 500:
				err = fmt.Errorf("service answered %s", resp.Status)
			case resp.StatusCode >= 400:
				se := &serviceError{status: resp.StatusCode}
				_ = json.Unmarshal(b, &se.ex)
				if se.ex.TypeName == runnerproto.ExAgentNotFound {
					return resp.StatusCode, fmt.Errorf("%w: %v", errGone, se)
				}
				if method == http.MethodPost && strings.Contains(u, "oauth2/token") {
					return resp.StatusCode, nil
				}
				return resp.StatusCode, se
			default:
				if out != nil && resp.StatusCode == http.StatusOK && len(b) > 0 {
					if err := json.Unmarshal(b, out); err != nil {
						return resp.StatusCode, fmt.Errorf("cannot read the service's answer: %w", err)
					}
				}
				return resp.StatusCode, nil
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if time.Now().After(deadline) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 2*time.Second)
	}
}
