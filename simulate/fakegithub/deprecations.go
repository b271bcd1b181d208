package fakegithub

import (
	"net/http"
	"time"
)

// The runner version end-of-life schedule, GET
// /{scope}/actions/runners/deprecations/{version} at a repository,
// organization or enterprise (GitHub changelog 2026-09-03, operations
// actions/get-runner-version-deprecation-for-{repo,org}): the version and
// the times after which GitHub stops registering runners of it and stops
// giving them jobs, each null while none is set.
const (
	RouteRepoRunnerDeprecation = "GET /repos/{owner}/{repo}/actions/runners/deprecations/{version}"
	RouteOrgRunnerDeprecation  = "GET /orgs/{org}/actions/runners/deprecations/{version}"
)

// depRec is one version's schedule.
type depRec struct{ registration, runtime time.Time }

// SetDeprecationSchedule sets the times the deprecations route reports for
// version (zero: null). It refuses nothing by itself: SetDeprecated does.
func (s *Server) SetDeprecationSchedule(version string, registration, runtime time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deprecations == nil {
		s.deprecations = map[string]depRec{}
	}
	s.deprecations[version] = depRec{registration: registration, runtime: runtime}
}

func (s *Server) runnerDeprecation(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, rep, ok := s.pathScope(c); !ok {
		return rep
	}
	v := c.r.PathValue("version")
	rec := s.deprecations[v]
	if s.deprecated[v] && rec.runtime.IsZero() {
		rec.runtime = s.deprecatedAt[v]
	}
	at := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339)
	}
	return reply{status: http.StatusOK, body: map[string]any{
		"runner_version": v, "registration_deprecates_at": at(rec.registration), "runtime_deprecates_at": at(rec.runtime),
	}}
}
