package fakegithub

import (
	"slices"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// RunnerVersion is the version the fake runner reports (and the downloads
// offer, by default).
const RunnerVersion = runnerproto.RunnerVersion

// Fault is what a route does instead of (or before) answering normally.
type Fault struct {
	// Status, when not 0, is answered instead of the real reply, with a
	// GitHub error body (or Body).
	Status int
	// Times is how many requests the fault hits; 0 or less means every one
	// until ClearFaults.
	Times int
	// Latency delays the request (then the fault or the real reply).
	Latency time.Duration
	// Drop closes the connection without an answer.
	Drop bool
	// RetryAfter adds a Retry-After header (seconds, rounded up).
	RetryAfter time.Duration
	// Body replaces the error body (with Status 200 it corrupts a download).
	Body string
}

// Fault makes route (a Route* name, one of Routes, or FaultAll) misbehave.
// A later Fault for the same route replaces it.
func (s *Server) Fault(route string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[route] = f
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

func (s *Server) takeFault(route string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range []string{route, FaultAll} {
		f, ok := s.faults[key]
		if !ok {
			continue
		}
		if f.Times > 0 {
			if f.Times == 1 {
				delete(s.faults, key)
			} else {
				g := f
				g.Times--
				s.faults[key] = g
			}
		}
		return f, true
	}
	return Fault{}, false
}

// Routes lists every route name the fake serves.
func (s *Server) Routes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.routeNames)
}

// Call is one request the fake answered.
type Call struct {
	At     time.Time
	Kind   string // KindREST, KindScaleSet, KindRunner or KindDownload
	Route  string
	Path   string
	Status int // 0 when the connection was dropped
}

// Calls returns how many requests route received (faulted ones included).
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// CallsTotal returns how many requests the fake received.
func (s *Server) CallsTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.callKinds {
		n += v
	}
	return n
}

func (s *Server) callsOfKind(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.callKinds {
		if k.String() == name {
			n += v
		}
	}
	return n
}

// CallsREST returns how many REST API requests the fake received (the ones
// a rate limit governs, plus /rate_limit and the token exchanges).
func (s *Server) CallsREST() int { return s.callsOfKind(KindREST) }

// CallsScaleSet returns how many scale-set service requests (admin calls and
// the message queue) the fake received.
func (s *Server) CallsScaleSet() int { return s.callsOfKind(KindScaleSet) }

// CallsRunner returns how many requests runners made.
func (s *Server) CallsRunner() int { return s.callsOfKind(KindRunner) }

// CallLog returns the requests answered, oldest first (the newest 100,000
// at most).
func (s *Server) CallLog() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.callLog)
}

// ResetCalls zeroes the counters and the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
	clear(s.callKinds)
	s.callLog = nil
}

// SetRateLimit sets the REST budget per window and refills it now, starting
// a new window.
func (s *Server) SetRateLimit(perWindow int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.limit, s.rate.remaining = perWindow, perWindow
	s.rate.reset = resetAfter(s.now(), s.rate.window)
}

// SetRateLimitWindow sets the rate-limit window, starting a new one now
// (with a full budget).
func (s *Server) SetRateLimitWindow(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.window = d
	s.rate.remaining = s.rate.limit
	s.rate.reset = resetAfter(s.now(), d)
}

// RateLimit returns the REST budget as the fake sees it.
func (s *Server) RateLimit() (limit, remaining int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshRate()
	return s.rate.limit, s.rate.remaining, s.rate.reset
}

// SecondaryLimit makes the next times REST requests trip a secondary rate
// limit: 403 with Retry-After. Requests sent before a retry-after elapsed are
// refused again and counted by SecondaryLimitViolations.
func (s *Server) SecondaryLimit(retryAfter time.Duration, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secondary.retryAfter, s.secondary.times = retryAfter, times
}

// SecondaryLimitViolations counts requests sent while a secondary limit's
// retry-after had not elapsed: a client that honours Retry-After scores 0.
func (s *Server) SecondaryLimitViolations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secondary.violations
}

// SetDeprecated marks a runner version deprecated: runners of that version
// are refused (and exit 7 when asked to), and the deprecations route says
// its runtime ended now (unless SetDeprecationSchedule said when).
func (s *Server) SetDeprecated(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deprecated[version] = true
	if s.deprecatedAt == nil {
		s.deprecatedAt = map[string]time.Time{}
	}
	if _, ok := s.deprecatedAt[version]; !ok {
		s.deprecatedAt[version] = time.Now()
	}
	s.changed()
}

// MarkRunnerVersionDeprecated marks the fake runner's version deprecated.
func (s *Server) MarkRunnerVersionDeprecated() { s.SetDeprecated(RunnerVersion) }

// SetZombie turns zombie mode on or off (see Zombie).
func (s *Server) SetZombie(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.zombie = on
	s.changed()
}
