package fakegithub

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
