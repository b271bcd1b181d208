package github

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
	rm "github.com/runner-manager/runner-manager"
)

// statusOf returns the HTTP status, headers and GitHub's message of a
// go-github error, or 0 when err is not an answer from GitHub.
func statusOf(err error) (int, http.Header, string) {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		if rq := er.Response.Request; rq != nil && rq.URL != nil && credentialRoute(rq.Method, rq.URL.Path) {
			return er.Response.StatusCode, er.Response.Header, ""
		}
		return er.Response.StatusCode, er.Response.Header, er.Message
	}
	var ae *gh.AcceptedError
	if errors.As(err, &ae) {
		return http.StatusAccepted, nil, ""
	}
	return 0, nil, ""
}

// restError maps an error of a REST call doing action on scope to this
// package's errors: *RateLimitError, ErrUnauthorized (naming the missing
// permission), ErrNotFound (naming the scope), or err with context.
func restError(err error, action string, scope rm.Scope) error {
	if err == nil {
		return nil
	}
	if rle, ok := asRateLimit(err); ok {
		return fmt.Errorf("%s: %w", action, rle)
	}
	var ghr *gh.RateLimitError
	if errors.As(err, &ghr) {
		return fmt.Errorf("%s: %w", action, &rm.RateLimitError{Reset: ghr.Rate.Reset.Time})
	}
	var gha *gh.AbuseRateLimitError
	if errors.As(err, &gha) {
		return fmt.Errorf("%s: %w", action, &rm.RateLimitError{Reset: time.Now().Add(gha.GetRetryAfter()), Secondary: true})
	}
	status, header, msg := statusOf(err)
	if mapped := statusError(status, header, msg, action, scope); mapped != nil {
		return mapped
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		if rq := er.Response.Request; rq != nil && rq.URL != nil && credentialRoute(rq.Method, rq.URL.Path) {
			return unavailable(status, fmt.Errorf("%s: %w", action, &quietError{status: status, err: err}))
		}
	}
	return unavailable(status, fmt.Errorf("%s: %w", action, err))
}

// credentialRoute reports whether GitHub's answer to method path can carry
// a credential: a registration or remove token, the runner-registration
// exchange (an admin token), a JIT configuration (REST and the scale-set
// service), a message session's create or refresh (its queue token), a
// GitHub App installation token. The body of such an answer, even of an
// error, is never quoted in an error or a log: a client that took a
// success for a failure would print the credential (issue 23).
func credentialRoute(method, path string) bool {
	p := strings.ToLower(strings.TrimRight(path, "/"))
	switch {
	case strings.HasSuffix(p, "/actions/runners/registration-token"),
		strings.HasSuffix(p, "/actions/runners/remove-token"),
		strings.HasSuffix(p, "/actions/runner-registration"),
		strings.HasSuffix(p, "/actions/runners/generate-jitconfig"),
		strings.HasSuffix(p, "/generatejitconfig"),
		strings.Contains(p, "/app/installations/") && strings.HasSuffix(p, "/access_tokens"):
		return true
	case strings.Contains(p, "/_apis/runtime/runnerscalesets/") && strings.Contains(p, "/sessions"):
		return method == http.MethodPost || method == http.MethodPatch
	}
	return false
}

// quietError is the failure of a credential route: it keeps the error for
// errors.Is and errors.As (actions/scaleset's sentinels) but prints only the
// status, as the error's own text can quote the answer's body
// (actions/scaleset v0.4.0 errors.go:42-98 appends it).
type quietError struct {
	status int
	err    error
}

func (e *quietError) Error() string {
	if e.status == 0 {
		return "the request failed (the answer of a route that carries credentials is not shown)"
	}
	return fmt.Sprintf("GitHub answered %d %s (the answer of a route that carries credentials is not shown)", e.status, http.StatusText(e.status))
}

func (e *quietError) Unwrap() error { return e.err }

// statusError maps an HTTP status from GitHub to this package's errors, or
// nil when the status has no special meaning.
func statusError(status int, header http.Header, msg, action string, scope rm.Scope) error {
	detail := ""
	if msg != "" {
		detail = " (GitHub said: " + msg + ")"
	}
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: the token or app key is invalid, revoked or expired; create a new one%s", action, rm.ErrUnauthorized, detail)
	case http.StatusForbidden:
		// The credentials are good; the request is not theirs to make.
		return rm.WithClass(rm.ClassRefused, fmt.Errorf("%s: %w: the credentials lack %s%s", action, rm.ErrUnauthorized, neededPermission(header, scope), detail))
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w: %s does not exist or the credentials cannot see it%s", action, rm.ErrNotFound, describeScope(scope), detail)
	}
	return nil
}

// unavailable gives err, GitHub's answer with status, ClassUnavailable
// when the status is a server error: trying later may work.
func unavailable(status int, err error) error {
	if status >= 500 {
		return rm.WithClass(rm.ClassUnavailable, err)
	}
	return err
}

// neededPermission names what a 403 asked for: GitHub's
// X-Accepted-GitHub-Permissions (fine-grained tokens and apps) or
// X-Accepted-OAuth-Scopes (classic tokens), else what runners need.
func neededPermission(h http.Header, scope rm.Scope) string {
	where := "on " + describeScope(scope)
	if p := h.Get("X-Accepted-GitHub-Permissions"); p != "" {
		var alts []string
		for _, alt := range strings.Split(p, ";") {
			var perms []string
			for _, one := range strings.Split(alt, ",") {
				if one = strings.TrimSpace(one); one != "" {
					perms = append(perms, strings.Replace(one, "=", ":", 1))
				}
			}
			if len(perms) > 0 {
				alts = append(alts, strings.Join(perms, " and "))
			}
		}
		if len(alts) > 0 {
			return strings.Join(alts, " or ") + " " + where
		}
	}
	if s := h.Get("X-Accepted-OAuth-Scopes"); s != "" {
		return "the token scope " + strings.Join(strings.Fields(strings.ReplaceAll(s, ",", " ")), " or ") + " " + where
	}
	switch scope.Kind {
	case rm.ScopeOrganization:
		return "organization_self_hosted_runners:write (classic token: admin:org) " + where
	case rm.ScopeEnterprise:
		return "the manage_runners:enterprise scope " + where
	}
	return "administration:write (classic token: repo) " + where
}

func describeScope(s rm.Scope) string {
	switch s.Kind {
	case rm.ScopeRepository:
		return "the repository " + s.Name
	case rm.ScopeOrganization:
		return "the organization " + s.Name
	case rm.ScopeEnterprise:
		return "the enterprise " + s.Name
	}
	return "the scope " + s.String()
}

// actionsMessage is the message of an Actions service error body
// ({"typeName": ..., "message": ...}), or the body's start.
func actionsMessage(body []byte) (typeName, msg string) {
	var e struct {
		TypeName string `json:"typeName"`
		Message  string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && (e.TypeName != "" || e.Message != "") {
		return e.TypeName, e.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return "", s
}
