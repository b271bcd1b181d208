package fakegithub

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub/internal/runnerproto"
)

// RunnerVersion is the version the fake runner reports (and the downloads
// offer, by default).
const RunnerVersion = runnerproto.RunnerVersion

// Route names for Fault and Calls: a route is its method and path pattern,
// REST paths without the /api/v3 prefix, Actions service paths without
// ActionsPath. Routes lists them all.
//
// Each route names the source of its statuses and body in GitHub's own
// code (docs/github-fake.md has the table; conformance_test.go checks
// every success the fake answers against it). REST statuses are the REST
// description's (github/rest-api-description, by operation id); go-github
// takes any 2xx but 202 (github.go:1719). The org and enterprise forms of
// a repository route share its source.
const (
	// FaultAll matches every route in Fault.
	FaultAll = "*"

	// RouteRepoRunners: go-github v88 actions_runners.go:165 (Runners :149);
	// REST actions/list-self-hosted-runners-for-repo: 200, Link pages.
	RouteRepoRunners = "GET /repos/{owner}/{repo}/actions/runners"
	// RouteRepoRunner: go-github v88 actions_runners.go:191 (Runner :132); 200,
	// 404.
	RouteRepoRunner = "GET /repos/{owner}/{repo}/actions/runners/{runner_id}"
	// RouteRepoDeleteRunner: go-github v88 actions_runners.go:240; REST 204; 422
	// "Bad request - Runner \"name\" is still running a job\"" while busy (ARC
	// controllers/actions.summerwind.net/runner_graceful_stop.go quotes it).
	RouteRepoDeleteRunner = "DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}"
	// RouteRepoJITConfig: go-github v88 actions_runners.go:87 (JITRunnerConfig
	// :56); REST actions/generate-runner-jitconfig-for-repo: 201, 404, 409, 422.
	RouteRepoJITConfig = "POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig"
	// RouteRepoRegistration: actions/scaleset@v0.4.0 client.go:773 takes 201
	// only; go-github v88 actions_runners.go:114 (RegistrationToken :104).
	RouteRepoRegistration = "POST /repos/{owner}/{repo}/actions/runners/registration-token"
	// RouteRepoDownloads: go-github v88 actions_runners.go:28
	// (RunnerApplicationDownload :14); 200.
	RouteRepoDownloads = "GET /repos/{owner}/{repo}/actions/runners/downloads"
	// RouteOrgRunners: go-github v88 actions_runners.go:299; as RouteRepoRunners.
	RouteOrgRunners = "GET /orgs/{org}/actions/runners"
	// RouteOrgDeleteRunner: go-github v88 actions_runners.go:368; as
	// RouteRepoDeleteRunner.
	RouteOrgDeleteRunner = "DELETE /orgs/{org}/actions/runners/{runner_id}"
	// RouteOrgJITConfig: go-github v88 actions_runners.go:66; as
	// RouteRepoJITConfig.
	RouteOrgJITConfig = "POST /orgs/{org}/actions/runners/generate-jitconfig"
	// RouteOrgRegistration: actions/scaleset@v0.4.0 client.go:773 (path :912);
	// go-github v88 actions_runners.go:277; 201.
	RouteOrgRegistration = "POST /orgs/{org}/actions/runners/registration-token"
	// RouteOrgRunnerGroups: go-github v88 actions_runner_groups.go:91
	// (RunnerGroups :31); 200.
	RouteOrgRunnerGroups = "GET /orgs/{org}/actions/runner-groups"
	// RouteEnterpriseJITConfig: go-github v88 enterprise_actions_runners.go:39;
	// as RouteRepoJITConfig.
	RouteEnterpriseJITConfig = "POST /enterprises/{enterprise}/actions/runners/generate-jitconfig"
	// RouteRepoRuns: go-github v88 actions_workflow_runs.go:186 (WorkflowRuns
	// :55); REST actions/list-workflow-runs-for-repo: 200, ?status= a status or
	// a conclusion.
	RouteRepoRuns = "GET /repos/{owner}/{repo}/actions/runs"
	// RouteRunJobs: go-github v88 actions_workflow_jobs.go:76 (Jobs :54,
	// WorkflowJob :26: runner_* null until a runner has it); 200.
	RouteRunJobs = "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs"
	// RouteRateLimit: go-github v88 rate_limit.go:78 (RateLimits :38); REST
	// rate-limit/get: 200, free; 404 on GHES with rate limiting off.
	RouteRateLimit = "GET /rate_limit"
	// RouteAccessToken: actions/scaleset@v0.4.0 client.go:814 takes 201 only;
	// go-github v88 apps.go:386.
	RouteAccessToken = "POST /app/installations/{installation_id}/access_tokens"
	// RouteRunnerRegistration: actions/scaleset@v0.4.0 client.go:868-895: any
	// 2xx, 401/403 retried (:875), body {url, token} (:826); actions/runner
	// ConfigurationManager.cs:831 (IsSuccessStatusCode :860).
	RouteRunnerRegistration = "POST /actions/runner-registration"
	// RouteDownload: The fake's own: the download_url the downloads list names
	// (a blob, 200).
	RouteDownload = "GET /_downloads/{file}"
	// RouteScaleSets: actions/scaleset@v0.4.0 client.go:283-316: 200, {count,
	// value} (types.go:114); count 0 is "none".
	RouteScaleSets = "GET /_apis/runtime/runnerscalesets"
	// RouteScaleSet: actions/scaleset@v0.4.0 client.go:335: 200, RunnerScaleSet
	// (types.go:81).
	RouteScaleSet = "GET /_apis/runtime/runnerscalesets/{id}"
	// RouteCreateScaleSet: actions/scaleset@v0.4.0 client.go:430: 200 (not 201).
	RouteCreateScaleSet = "POST /_apis/runtime/runnerscalesets"
	// RouteUpdateScaleSet: actions/scaleset@v0.4.0 client.go:466: 200.
	RouteUpdateScaleSet = "PATCH /_apis/runtime/runnerscalesets/{id}"
	// RouteDeleteScaleSet: actions/scaleset@v0.4.0 client.go:494: 204.
	RouteDeleteScaleSet = "DELETE /_apis/runtime/runnerscalesets/{id}"
	// RouteRunnerGroupByName: actions/scaleset@v0.4.0 client.go:351-377: 200,
	// {count, value} (types.go:76); count 0 is an error there.
	RouteRunnerGroupByName = "GET /_apis/runtime/runnergroups"
	// RouteScaleSetJITConfig: actions/scaleset@v0.4.0 client.go:628: 200,
	// {runner, encodedJITConfig} (types.go:158); AgentExistsException maps to
	// RunnerExistsError (errors.go:89).
	RouteScaleSetJITConfig = "POST /_apis/runtime/runnerscalesets/{id}/generatejitconfig"
	// RouteAgent: actions/scaleset@v0.4.0 client.go:658: 200, RunnerReference
	// (types.go:152); AgentNotFoundException maps to RunnerNotFoundError
	// (errors.go:91).
	RouteAgent = "GET /_apis/distributedtask/pools/0/agents/{id}"
	// RouteAgentByName: actions/scaleset@v0.4.0 client.go:671-704: 200, {count,
	// value} (types.go:147); count 0 is "none".
	RouteAgentByName = "GET /_apis/distributedtask/pools/0/agents"
	// RouteDeleteAgent: actions/scaleset@v0.4.0 client.go:725: 204;
	// JobStillRunningException maps to JobStillRunningError (errors.go:93),
	// whatever the status.
	RouteDeleteAgent = "DELETE /_apis/distributedtask/pools/0/agents/{id}"
	// RouteCreateSession: actions/scaleset@v0.4.0 session_client.go:62: 200,
	// RunnerScaleSetSession (types.go:124); 409 SessionConflictException while
	// one lives (cloudbase/garm #700).
	RouteCreateSession = "POST /_apis/runtime/runnerscalesets/{id}/sessions"
	// RouteRefreshSession: actions/scaleset@v0.4.0 session_client.go:84: 200, a
	// new messageQueueAccessToken.
	RouteRefreshSession = "PATCH /_apis/runtime/runnerscalesets/{id}/sessions/{session}"
	// RouteDeleteSession: actions/scaleset@v0.4.0 session_client.go:76: 204.
	RouteDeleteSession = "DELETE /_apis/runtime/runnerscalesets/{id}/sessions/{session}"
	// RouteAcquireJobs: actions/scaleset@v0.4.0 session_client.go:259-296: queue
	// token, 200 {count, value} (types.go:119); 401 is an expired token (:282).
	RouteAcquireJobs = "POST /_apis/runtime/runnerscalesets/{id}/acquirejobs"
	// RouteMessages: actions/scaleset@v0.4.0 session_client.go:122-167: 202
	// none, 200 message (types.go:98, body a JSON string), 401 expired token;
	// listener/listener.go:180.
	RouteMessages = "GET /_apis/runtime/runnerscalesets/{id}/sessions/{session}/messages"
	// RouteDeleteMessage: actions/scaleset@v0.4.0 session_client.go:192-224:
	// 204; 401 expired token.
	RouteDeleteMessage = "DELETE /_apis/runtime/runnerscalesets/{id}/sessions/{session}/messages/{message}"
	// RouteRunnerToken: The fake runner's own (the real one: actions/runner
	// src/Sdk/WebApi/WebApi/OAuth/VssOAuthTokenHttpClient.cs:51).
	RouteRunnerToken = "POST /_apis/oauth2/token"
	// RouteRunnerCreateSession: The fake runner's own (the real one:
	// actions/runner
	// src/Sdk/DTGenerated/Generated/TaskAgentHttpClientBase.cs:744).
	RouteRunnerCreateSession = "POST /_apis/distributedtask/pools/{pool}/sessions"
	// RouteRunnerDeleteSession: The fake runner's own (actions/runner
	// TaskAgentHttpClientBase.cs:773).
	RouteRunnerDeleteSession = "DELETE /_apis/distributedtask/pools/{pool}/sessions/{session}"
	// RouteRunnerMessages: The fake runner's own (actions/runner
	// TaskAgentHttpClientBase.cs:458, a long poll).
	RouteRunnerMessages = "GET /_apis/distributedtask/pools/{pool}/messages"
	// RouteRunnerJobStart: The fake runner's own: the real runner takes a job by
	// its message, no start call.
	RouteRunnerJobStart = "POST /_apis/distributedtask/pools/{pool}/jobrequests/{request}/start"
	// RouteRunnerJobRenew: The fake runner's own (the real one PATCHes the job
	// request: actions/runner
	// src/Sdk/DTWebApi/WebApi/TaskAgentHttpClient.cs:93).
	RouteRunnerJobRenew = "POST /_apis/distributedtask/pools/{pool}/jobrequests/{request}/renew"
	// RouteRunnerJobFinish: The fake runner's own (actions/runner
	// TaskAgentHttpClient.cs:61).
	RouteRunnerJobFinish      = "POST /_apis/distributedtask/pools/{pool}/jobrequests/{request}/finish"
	routeUnknownREST          = "unknown REST route"
	routeUnknownActions       = "unknown actions route"
	routeRunnerGroupsTrailing = "GET /_apis/runtime/runnergroups/{$}"
)

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

// AddToken makes the fake accept token as a classic personal access token
// with every scope the manager needs (repo, admin:org,
// manage_runners:enterprise).
func (s *Server) AddToken(token string) {
	s.AddTokenWithScopes(token, ScopeRepo, ScopeAdminOrg, ScopeManageRunnersEnterprise)
}

// The OAuth scopes of a classic personal access token that the runner
// endpoints need, by where the runners register.
const (
	ScopeRepo                    = "repo"
	ScopeAdminOrg                = "admin:org"
	ScopeManageRunnersEnterprise = "manage_runners:enterprise"
)

// AddTokenWithScopes makes the fake accept token as a classic personal
// access token with only these scopes (sent back in X-OAuth-Scopes):
// repository endpoints need "repo", organization ones "admin:org",
// enterprise ones "manage_runners:enterprise"; without it they answer 403.
func (s *Server) AddTokenWithScopes(token string, scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = tokenInfo{scopes: slices.Clone(scopes), pat: true}
	s.ledger.note(CredPAT, token)
}

// RevokeToken makes the fake refuse token (401 Bad credentials), a personal
// access token or an installation token.
func (s *Server) RevokeToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
}

// AddApp registers a GitHub App by its id and public key, installed as
// installationID: a JWT signed with its private key (issuer the app id or
// AppClientID) exchanges for an installation token that then works like a
// personal access token.
func (s *Server) AddApp(appID int64, key *rsa.PublicKey, installationID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appID]
	if a == nil {
		a = &app{id: appID, installations: map[int64]bool{}}
		s.apps[appID] = a
	}
	a.key = key
	a.installations[installationID] = true
}

// AppClientID is the client ID the fake gives app appID (either it or the
// app id works as a JWT issuer).
func AppClientID(appID int64) string { return "Iv1.fake" + strconv.FormatInt(appID, 10) }

// AddOrg adds an organization. It panics on a malformed login (a programming
// error).
func (s *Server) AddOrg(login string) {
	sc, err := rm.Organization(login)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addOrg(sc.Name)
}

func (s *Server) addOrg(login string) *org {
	o := s.orgs[strings.ToLower(login)]
	if o == nil {
		o = &org{login: login}
		s.orgs[strings.ToLower(login)] = o
	}
	return o
}

// AddRepo adds the repository "owner/repo" and its owner as an
// organization. It panics on a malformed name (a programming error).
func (s *Server) AddRepo(ownerRepo string) {
	sc, err := rm.Repository(ownerRepo)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepo(sc.Name)
}

func (s *Server) addRepo(fullName string) *repo {
	r := s.repos[strings.ToLower(fullName)]
	if r == nil {
		owner, _, _ := strings.Cut(fullName, "/")
		s.addOrg(owner)
		s.nextID++
		r = &repo{id: s.nextID, fullName: fullName}
		s.repos[strings.ToLower(fullName)] = r
	}
	return r
}

// AddEnterprise adds an enterprise holding orgs (added if new). It panics
// on a malformed name (a programming error).
func (s *Server) AddEnterprise(slug string, orgs ...string) {
	if _, err := rm.Enterprise(slug); err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	for _, o := range orgs {
		if _, err := rm.Organization(o); err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enterprises[strings.ToLower(slug)] = slug
	for _, o := range orgs {
		s.addOrg(o).enterprise = slug
	}
}

// AddRunnerGroup adds a runner group to an organization or enterprise and
// returns its id (every scope also has "Default", id 1). It panics when the
// scope is unknown or a repository (a programming error).
func (s *Server) AddRunnerGroup(scope rm.Scope, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if scope.Kind == rm.ScopeRepository || !s.scopeExists(scope) {
		panic(fmt.Sprintf("fakegithub: runner groups live in a known organization or enterprise, not %s", scope))
	}
	if g := s.groupByName(scope, name); g != nil {
		return g.id
	}
	s.nextID++
	g := &runnerGroup{id: s.nextID, name: name}
	k := scopeKey(scope)
	s.groups[k] = append(s.groups[k], g)
	return g.id
}

// JobSpec is a job to queue: what it asks of a runner and what it costs.
type JobSpec struct {
	// Repo is "owner/repo"; it is added if unknown.
	Repo string
	// Labels are the job's runs-on labels. A job for a scale set has one:
	// the scale set's name.
	Labels   []string
	Name     string // display name; default "job-<id>"
	Workflow string // workflow ref; default "owner/repo/.github/workflows/ci.yml@refs/heads/main"
	// Duration is how long the runner works on it.
	Duration time.Duration
	// MemoryBytes the runner allocates and touches while it works.
	MemoryBytes uint64
	// CPUMillicores the runner burns while it works (1000 = one core).
	CPUMillicores int
	// Script, when set, is a shell script the runner runs (sh -c, in its
	// work folder, with its environment) before it works: a job's step. A
	// step that leaves processes behind (`sleep 300 &`) is how tests make
	// a job that does.
	Script string
	// Result is what the job concludes with: "" or ResultSucceeded, or
	// ResultFailed.
	Result string
	// HangAfter makes the fake runner hang after the job: it reports the
	// job's end (GitHub says the job completed), then lives on, its
	// session open, until it is stopped, as real runners were seen to
	// (actions/runner #4703, #4418).
	HangAfter bool
}

// JobRecord is a job's life as the fake saw it.
type JobRecord struct {
	ID, RunID int64
	// RequestID is the scale-set service's runnerRequestId (new on requeue).
	RequestID int64
	// ScaleSetJobID is the jobId its scale-set messages carry, in the form
	// WithScaleSetJobIDs set ("" for JobIDNone); it stays on requeue.
	ScaleSetJobID string
	Repo          string
	Labels        []string
	Name          string
	Workflow      string
	// Status is "queued", "in_progress" or "completed".
	Status string
	// Result once completed: "succeeded", "failed" or "canceled".
	Result string
	// ScaleSetID is the scale set that acquired it (0: none).
	ScaleSetID         int
	QueuedAt           time.Time
	AcquiredAt         time.Time
	ScaleSetAssignedAt time.Time
	// AssignedAt is when a runner was handed the job.
	AssignedAt time.Time
	// RunnerID and RunnerName are the runner it was handed to: the one
	// that ran it, once started (Restart clears them on a job it queues
	// again). The REST API shows them only once the job is in progress.
	RunnerID      int64
	RunnerName    string
	RunnerGroupID int64
	StartedAt     time.Time
	CompletedAt   time.Time
	// Starts is how many times a runner started it: 1 for a job run once.
	Starts int
	// Requeues is how many times it came back after no runner took it.
	Requeues int
}

// EnqueueJob queues a job (and its workflow run) and returns its id. It
// panics on a malformed repository name (a programming error).
func (s *Server) EnqueueJob(spec JobSpec) int64 {
	sc, err := rm.Repository(spec.Repo)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	spec.Labels = slices.Clone(spec.Labels)
	if spec.Result == "" {
		spec.Result = ResultSucceeded
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepo(sc.Name)
	s.nextID++
	runID := s.nextID
	s.nextID++
	id := s.nextID
	s.nextRequestID++
	if spec.Name == "" {
		spec.Name = "job-" + strconv.FormatInt(id, 10)
	}
	if spec.Workflow == "" {
		spec.Workflow = sc.Name + "/.github/workflows/ci.yml@refs/heads/main"
	}
	j := &job{spec: spec, rec: JobRecord{
		ID: id, RunID: runID, RequestID: s.nextRequestID, ScaleSetJobID: s.scaleSetJobID(id), Repo: sc.Name,
		Labels: spec.Labels, Name: spec.Name, Workflow: spec.Workflow,
		Status: statusQueued, QueuedAt: s.now(),
	}}
	s.jobs = append(s.jobs, j)
	s.jobByID[id] = j
	s.offer(j)
	s.webhook("queued", j)
	s.changed()
	return id
}

// Jobs returns every job's record, in queue order.
func (s *Server) Jobs() []JobRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobRecord, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, j.record())
	}
	return out
}

// Job returns one job's record.
func (s *Server) Job(id int64) (JobRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobByID[id]
	if j == nil {
		return JobRecord{}, false
	}
	return j.record(), true
}

func (j *job) record() JobRecord {
	r := j.rec
	r.Labels = slices.Clone(r.Labels)
	return r
}

// RunnerRecord is a runner registration as the fake holds it.
type RunnerRecord struct {
	ID         int64
	Name       string
	Scope      rm.Scope
	GroupID    int64
	Labels     []string
	ScaleSetID int
	Ephemeral  bool
	Online     bool
	Busy       bool
	JobID      int64
	Version    string
	OS         string
	CreatedAt  time.Time
}

// Runners returns the registered runners, by id.
func (s *Server) Runners() []RunnerRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunnerRecord, 0, len(s.runners))
	for _, id := range slices.Sorted(maps.Keys(s.runners)) {
		r := s.runners[id]
		out = append(out, RunnerRecord{
			ID: r.id, Name: r.name, Scope: r.scope, GroupID: r.groupID, Labels: slices.Clone(r.labels),
			ScaleSetID: r.scaleSet, Ephemeral: r.ephemeral, Online: s.online(r), Busy: r.busy(),
			JobID: r.job, Version: r.version, OS: r.os, CreatedAt: r.createdAt,
		})
	}
	return out
}

// ScaleSetRecord is a scale set as the fake holds it.
type ScaleSetRecord struct {
	ID      int
	Name    string
	Scope   rm.Scope
	GroupID int64
	// SessionOwner is the owner of its live message session ("" if none).
	SessionOwner string
	// MaxCapacity is the latest X-ScaleSetMaxCapacity a session sent.
	MaxCapacity int
	// Assigned is statistics.totalAssignedJobs.
	Assigned      int
	Running       int
	Available     int
	DisableUpdate bool
	// Polling is how many message-queue polls are waiting now.
	Polling int
}

// ScaleSets returns the scale sets, by id.
func (s *Server) ScaleSets() []ScaleSetRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ScaleSetRecord
	for _, id := range s.scaleSetIDs() {
		ss := s.scaleSets[id]
		st := s.stats(ss)
		rec := ScaleSetRecord{
			ID: ss.id, Name: ss.name, Scope: ss.scope, GroupID: ss.groupID, MaxCapacity: ss.maxCapacity,
			Assigned: st.TotalAssignedJobs, Running: st.TotalRunningJobs, Available: st.TotalAvailableJobs,
			DisableUpdate: ss.disableUpdate,
		}
		if se := s.sessionOf(ss); se != nil {
			rec.SessionOwner, rec.Polling = se.owner, se.polling
		}
		out = append(out, rec)
	}
	return out
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

// ErrClosed is returned by waits on a closed server.
var ErrClosed = errors.New("fakegithub: server closed")

// WaitFor returns once cond holds, re-checking it on every change of the
// fake's state (and every 50 ms, for time-driven changes), or ctx's error.
// cond may call the Server's methods.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		ch := s.wake
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		}
	}
}

// WaitJobsCompleted returns once every queued job completed, or ctx's error.
func (s *Server) WaitJobsCompleted(ctx context.Context) error {
	return s.WaitFor(ctx, func() bool {
		for _, j := range s.Jobs() {
			if j.Status != statusCompleted {
				return false
			}
		}
		return true
	})
}
