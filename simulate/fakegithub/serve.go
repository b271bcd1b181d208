package fakegithub

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

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
