package fakegithub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

var defaultGroup = &runnerGroup{id: 1, name: rm.DefaultRunnerGroup, isDefault: true}

func scopeKey(sc rm.Scope) string { return strings.ToLower(sc.String()) }

func (s *Server) scopeExists(sc rm.Scope) bool {
	switch sc.Kind {
	case rm.ScopeRepository:
		return s.repos[strings.ToLower(sc.Name)] != nil
	case rm.ScopeOrganization:
		return s.orgs[strings.ToLower(sc.Name)] != nil
	case rm.ScopeEnterprise:
		return s.enterprises[strings.ToLower(sc.Name)] != ""
	}
	return false
}

// canonical returns sc with the name spelled as the fake holds it.
func (s *Server) canonical(sc rm.Scope) rm.Scope {
	switch sc.Kind {
	case rm.ScopeRepository:
		if r := s.repos[strings.ToLower(sc.Name)]; r != nil {
			sc.Name = r.fullName
		}
	case rm.ScopeOrganization:
		if o := s.orgs[strings.ToLower(sc.Name)]; o != nil {
			sc.Name = o.login
		}
	case rm.ScopeEnterprise:
		if e := s.enterprises[strings.ToLower(sc.Name)]; e != "" {
			sc.Name = e
		}
	}
	return sc
}

func (s *Server) groupsOf(sc rm.Scope) []*runnerGroup {
	return append([]*runnerGroup{defaultGroup}, s.groups[scopeKey(sc)]...)
}

func (s *Server) groupByID(sc rm.Scope, id int64) *runnerGroup {
	for _, g := range s.groupsOf(sc) {
		if g.id == id {
			return g
		}
	}
	return nil
}

func (s *Server) groupByName(sc rm.Scope, name string) *runnerGroup {
	for _, g := range s.groupsOf(sc) {
		if strings.EqualFold(g.name, name) {
			return g
		}
	}
	return nil
}

// pathScope reads the scope of a REST path and checks it exists (s.mu held).
func (s *Server) pathScope(c *call) (rm.Scope, reply, bool) {
	r := c.r
	var sc rm.Scope
	var err error
	switch {
	case r.PathValue("repo") != "":
		sc, err = rm.Repository(r.PathValue("owner") + "/" + r.PathValue("repo"))
	case r.PathValue("org") != "":
		sc, err = rm.Organization(r.PathValue("org"))
	case r.PathValue("enterprise") != "":
		sc, err = rm.Enterprise(r.PathValue("enterprise"))
	default:
		err = fmt.Errorf("no scope")
	}
	if err != nil || !s.scopeExists(sc) {
		return sc, ghError(http.StatusNotFound, "Not Found"), false
	}
	if need := neededScope(sc); c.token.pat && !slices.Contains(c.token.scopes, need) {
		msg := map[rm.ScopeKind]string{
			rm.ScopeRepository:   "Must have admin rights to Repository.",
			rm.ScopeOrganization: "You must be an org admin or have the " + need + " scope to do this.",
			rm.ScopeEnterprise:   "You must be an enterprise admin or have the " + need + " scope to do this.",
		}[sc.Kind]
		rep := ghError(http.StatusForbidden, msg)
		rep.header = http.Header{"X-Accepted-OAuth-Scopes": {need}}
		return sc, rep, false
	}
	return s.canonical(sc), reply{}, true
}

// neededScope is the classic PAT scope the runner endpoints of sc need.
func neededScope(sc rm.Scope) string {
	switch sc.Kind {
	case rm.ScopeOrganization:
		return ScopeAdminOrg
	case rm.ScopeEnterprise:
		return ScopeManageRunnersEnterprise
	}
	return ScopeRepo
}

// scopeFromConfigURL reads the scope of a runner configuration URL
// (URL/owner/repo, URL/org, URL/enterprises/slug).
func (s *Server) scopeFromConfigURL(raw string) (rm.Scope, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return rm.Scope{}, err
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return rm.Organization(parts[0])
	case len(parts) == 2 && strings.EqualFold(parts[0], "enterprises"):
		return rm.Enterprise(parts[1])
	case len(parts) == 2:
		return rm.Repository(parts[0] + "/" + parts[1])
	}
	return rm.Scope{}, fmt.Errorf("%q names no repository, organization or enterprise", raw)
}

func (s *Server) routes() {
	rest := func(k kind, pattern string, h func(*call) reply) { s.handle(s.restMux, k, pattern, h) }
	for _, p := range []string{"/repos/{owner}/{repo}", "/orgs/{org}", "/enterprises/{enterprise}"} {
		rest(kindREST, "GET "+p+"/actions/runners", s.listRunners)
		rest(kindREST, "GET "+p+"/actions/runners/{runner_id}", s.getRunner)
		rest(kindREST, "DELETE "+p+"/actions/runners/{runner_id}", s.deleteRunner)
		rest(kindREST, "POST "+p+"/actions/runners/registration-token", s.registrationToken)
		rest(kindREST, "POST "+p+"/actions/runners/remove-token", s.removeToken)
		rest(kindREST, "POST "+p+"/actions/runners/generate-jitconfig", s.generateJITConfig)
		rest(kindREST, "GET "+p+"/actions/runners/downloads", s.listDownloads)
		rest(kindREST, "GET "+p+"/actions/runners/deprecations/{version}", s.runnerDeprecation)
	}
	rest(kindREST, "GET /orgs/{org}/actions/runner-groups", s.listRunnerGroups)
	rest(kindREST, "GET /enterprises/{enterprise}/actions/runner-groups", s.listRunnerGroups)
	rest(kindREST, "GET /repos/{owner}/{repo}", s.getRepo)
	rest(kindREST, "GET /orgs/{org}", s.getOrg)
	rest(kindREST, "GET /user", s.getUser)
	rest(kindREST, "GET /repos/{owner}/{repo}/actions/runs", s.listRuns)
	rest(kindREST, "GET /repos/{owner}/{repo}/actions/runs/{run_id}", s.getRun)
	rest(kindREST, "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs", s.listRunJobs)
	rest(kindREST, "GET /repos/{owner}/{repo}/actions/jobs/{job_id}", s.getJob)
	rest(kindFree, RouteRateLimit, s.rateLimit)
	rest(kindApp, RouteAccessToken, s.accessToken)
	rest(kindRegistration, RouteRunnerRegistration, s.runnerRegistration)
	rest(kindDownload, RouteDownload, s.download)
	rest(kindREST, RouteLatestRunnerRelease, s.latestRunnerRelease)
	s.ciRoutes()
	s.handle(s.restMux, kindFree, routeUnknownREST, func(*call) reply { return ghError(http.StatusNotFound, "Not Found") }, "/")
	s.actionsRoutes()
}

type restLabel struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

type restRunner struct {
	ID            int64       `json:"id"`
	Name          string      `json:"name"`
	OS            string      `json:"os"`
	Status        string      `json:"status"`
	Busy          bool        `json:"busy"`
	Ephemeral     bool        `json:"ephemeral"`
	RunnerGroupID int64       `json:"runner_group_id"`
	Labels        []restLabel `json:"labels"`
}

func (s *Server) restRunner(r *runner) restRunner {
	out := restRunner{ID: r.id, Name: r.name, OS: r.os, Status: "offline", Busy: r.busy(), Ephemeral: r.ephemeral, RunnerGroupID: r.groupID, Labels: []restLabel{}}
	if out.OS == "" {
		out.OS = "unknown"
	}
	if s.online(r) {
		out.Status = "online"
	}
	for i, l := range r.labels {
		typ := "custom"
		if strings.EqualFold(l, "self-hosted") {
			typ = "read-only"
		}
		out.Labels = append(out.Labels, restLabel{ID: int64(i + 1), Name: l, Type: typ})
	}
	return out
}

func (s *Server) runnersIn(sc rm.Scope) []*runner {
	var out []*runner
	for _, r := range s.runners {
		if scopeKey(r.scope) == scopeKey(sc) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *runner) int { return int(a.id - b.id) })
	return out
}

func (s *Server) listRunners(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	// Scale-set runners are the Actions service's: GitHub's REST list
	// leaves them out (actions-runner-controller #2990).
	all := slices.DeleteFunc(s.runnersIn(sc), func(r *runner) bool { return r.scaleSet != 0 })
	if name := c.r.URL.Query().Get("name"); name != "" {
		all = slices.DeleteFunc(all, func(r *runner) bool { return !strings.EqualFold(r.name, name) })
	}
	lo, hi, link := paginate(c, len(all))
	page := make([]restRunner, 0, hi-lo)
	for _, r := range all[lo:hi] {
		page = append(page, s.restRunner(r))
	}
	return etagReply(c, http.StatusOK, map[string]any{"total_count": len(all), "runners": page}, link)
}

// runnerIn finds the classic runner of the path's {runner_id} in the path's
// scope; a scale-set runner is not found, as on GitHub (ask the Actions
// service's agents route).
func (s *Server) runnerIn(c *call) (*runner, reply) {
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return nil, rep
	}
	id, err := strconv.ParseInt(c.r.PathValue("runner_id"), 10, 64)
	r := s.runners[id]
	if err != nil || r == nil || r.scaleSet != 0 || scopeKey(r.scope) != scopeKey(sc) {
		return nil, ghError(http.StatusNotFound, "Not Found")
	}
	return r, reply{}
}

func (s *Server) getRunner(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rep := s.runnerIn(c)
	if r == nil {
		return rep
	}
	return etagReply(c, http.StatusOK, s.restRunner(r), nil)
}

func (s *Server) deleteRunner(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rep := s.runnerIn(c)
	if r == nil {
		return rep
	}
	if r.busy() {
		return ghError(http.StatusUnprocessableEntity, fmt.Sprintf("Bad request - Runner %q is still running a job\"", r.name))
	}
	s.removeRunner(r)
	s.changed()
	return reply{status: http.StatusNoContent}
}

func (s *Server) registrationToken(c *call) reply { return s.issueRegToken(c, false) }

func (s *Server) removeToken(c *call) reply { return s.issueRegToken(c, true) }

func (s *Server) issueRegToken(c *call, remove bool) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	tok := strings.ToUpper(randomToken("A"))[:29]
	exp := s.now().Add(time.Hour).UTC().Truncate(time.Second)
	s.regTokens[tok] = regToken{scope: sc, expires: exp, remove: remove}
	s.ledger.note(map[bool]string{false: CredRegistrationToken, true: CredRemoveToken}[remove], tok)
	return jsonReply(http.StatusCreated, map[string]any{"token": tok, "expires_at": exp})
}

type jitRequest struct {
	Name          string   `json:"name"`
	RunnerGroupID int64    `json:"runner_group_id"`
	Labels        []string `json:"labels"`
	WorkFolder    string   `json:"work_folder"`
}

func (s *Server) generateJITConfig(c *call) reply {
	var req jitRequest
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&req); err != nil {
		return ghError(http.StatusBadRequest, "Problems parsing JSON")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	switch {
	case strings.TrimSpace(req.Name) == "":
		return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\n\"name\" wasn't supplied.")
	case len(req.Name) > 64:
		return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\n\"name\" is too long (maximum is 64 characters).")
	case len(req.Labels) == 0 || len(req.Labels) > 100:
		return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\n\"labels\" must have between 1 and 100 items.")
	}
	for _, l := range req.Labels {
		if err := rm.ValidateLabel(l); err != nil {
			return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\nInvalid label: "+l)
		}
	}
	g := s.groupByID(sc, req.RunnerGroupID)
	if g == nil {
		return ghError(http.StatusNotFound, "Not Found")
	}
	if s.nameTaken(sc, req.Name) {
		return ghError(http.StatusConflict, fmt.Sprintf("Already exists - A runner with the name %s already exists.", req.Name))
	}
	r, encoded := s.newRunner(sc, req.Name, g.id, req.Labels, 0, req.WorkFolder)
	s.ledger.note(CredJITConfig, encoded)
	s.changed()
	return jsonReply(http.StatusCreated, map[string]any{"runner": s.restRunner(r), "encoded_jit_config": encoded})
}

func (s *Server) nameTaken(sc rm.Scope, name string) bool {
	for _, r := range s.runnersIn(sc) {
		if strings.EqualFold(r.name, name) {
			return true
		}
	}
	return false
}

func (s *Server) listDownloads(c *call) reply {
	s.mu.Lock()
	_, rep, ok := s.pathScope(c)
	s.mu.Unlock()
	if !ok {
		return rep
	}
	out := make([]map[string]string, 0, len(s.downloads))
	for _, d := range s.downloads {
		out = append(out, map[string]string{
			"os": d.os, "architecture": d.arch, "download_url": d.url,
			"filename": d.filename, "sha256_checksum": d.sha256,
		})
	}
	return etagReply(c, http.StatusOK, out, nil)
}

func (s *Server) listRunnerGroups(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	all := s.groupsOf(sc)
	lo, hi, link := paginate(c, len(all))
	var page []map[string]any
	for _, g := range all[lo:hi] {
		page = append(page, map[string]any{
			"id": g.id, "name": g.name, "visibility": "all", "default": g.isDefault, "inherited": false,
			"allows_public_repositories": false, "restricted_to_workflows": false, "selected_workflows": []string{},
			"runners_url": s.APIURL() + sc.Path() + "/actions/runner-groups/" + strconv.FormatInt(g.id, 10) + "/runners",
		})
	}
	return etagReply(c, http.StatusOK, map[string]any{"total_count": len(all), "runner_groups": page}, link)
}

func (s *Server) getRepo(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	r := s.repos[strings.ToLower(sc.Name)]
	return etagReply(c, http.StatusOK, s.repoJSON(r), nil)
}

func (s *Server) repoJSON(r *repo) map[string]any {
	owner, name, _ := strings.Cut(r.fullName, "/")
	return map[string]any{
		"id": r.id, "name": name, "full_name": r.fullName, "private": true,
		"owner":       map[string]any{"login": owner, "type": "Organization"},
		"html_url":    s.URL() + "/" + r.fullName,
		"permissions": map[string]bool{"admin": true, "maintain": true, "push": true, "triage": true, "pull": true},
	}
}

func (s *Server) getOrg(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	return etagReply(c, http.StatusOK, map[string]any{"login": sc.Name, "type": "Organization"}, nil)
}

func (s *Server) getUser(c *call) reply {
	return etagReply(c, http.StatusOK, map[string]any{"login": "octocat", "id": 1, "type": "User"}, nil)
}

func (s *Server) rateLimit(*call) reply {
	if s.cfg.rateLimitingOff {
		return ghError(http.StatusNotFound, "Rate limiting is not enabled.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshRate()
	core := map[string]any{
		"limit": s.rate.limit, "remaining": s.rate.remaining, "used": s.rate.limit - s.rate.remaining,
		"reset": s.rate.reset.Unix(), "resource": "core",
	}
	return jsonReply(http.StatusOK, map[string]any{"resources": map[string]any{"core": core}, "rate": core})
}

func (s *Server) accessToken(c *call) reply {
	id, _ := strconv.ParseInt(c.r.PathValue("installation_id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[c.app]
	if a == nil || !a.installations[id] {
		return ghError(http.StatusNotFound, "Not Found")
	}
	exp := s.now().Add(s.cfg.installationTokenLifetime).UTC()
	tok, err := s.installationToken(c.r, c.app, id, exp)
	if err != nil {
		return ghError(http.StatusInternalServerError, "fake: cannot sign the installation token")
	}
	s.tokens[tok] = tokenInfo{installation: id, expires: exp}
	s.ledger.note(CredInstallationToken, tok)
	return jsonReply(http.StatusCreated, map[string]any{
		"token": tok, "expires_at": exp, "repository_selection": "all",
		"permissions": map[string]string{"administration": "write", "actions": "read", "organization_self_hosted_runners": "write"},
	})
}

func (s *Server) runnerRegistration(c *call) reply {
	var req struct {
		URL         string `json:"url"`
		RunnerEvent string `json:"runner_event"`
	}
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&req); err != nil {
		return ghError(http.StatusBadRequest, "Problems parsing JSON")
	}
	sc, err := s.scopeFromConfigURL(req.URL)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || !s.scopeExists(sc) || scopeKey(sc) != scopeKey(c.scope) {
		return ghError(http.StatusNotFound, "Not Found")
	}
	tok, err := s.adminToken(s.canonical(sc))
	s.ledger.note(CredAdminToken, tok)
	if err != nil {
		return ghError(http.StatusInternalServerError, "fake: cannot sign the admin token")
	}
	status := s.cfg.runnerRegistrationStatus
	if status == 0 {
		status = http.StatusCreated // WithRunnerRegistrationStatus
	}
	return jsonReply(status, map[string]any{"url": s.actionsURL(), "token": tok, "token_schema": "OAuthAccessToken"})
}
