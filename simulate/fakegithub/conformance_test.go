package fakegithub_test

// Conformance: GitHub's own clients (actions/scaleset v0.4.0, its listener,
// go-github v88) driven against the fake over every route the manager uses,
// asserting what they decode. Every answer the fake gives in these tests is
// checked against the success statuses GitHub's client code accepts for its
// route (routeSources; docs/github-fake.md is the same table in prose), so a
// fake kinder than GitHub fails here, not in production.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
	gh "github.com/google/go-github/v88/github"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// routeSource is what GitHub's own code accepts from a route.
type routeSource struct {
	ok   []int  // success statuses GitHub's client takes (nil: the fake's own route)
	from string // where that is defined
}

const (
	ssClient  = "actions/scaleset@v0.4.0 client.go:"
	ssSession = "actions/scaleset@v0.4.0 session_client.go:"
	goGitHub  = "go-github v88 "
)

// routeSources maps every route the fake serves to its source. REST
// statuses: go-github's CheckResponse (github.go:1719) takes any 2xx but
// 202; the status named is the REST description's for the operation.
func routeSources() map[string]routeSource {
	m := map[string]routeSource{
		"GET /orgs/{org}/actions/runner-groups":               {[]int{200}, goGitHub + "actions_runner_groups.go:91; REST actions/list-self-hosted-runner-groups-for-org"},
		"GET /enterprises/{enterprise}/actions/runner-groups": {[]int{200}, goGitHub + "enterprise_actions_runner_groups.go:90; REST enterprise-admin/list-self-hosted-runner-groups-for-enterprise"},
		"GET /repos/{owner}/{repo}":                           {[]int{200}, goGitHub + "repos.go:658; REST repos/get"},
		"GET /orgs/{org}":                                     {[]int{200}, goGitHub + "orgs.go:239; REST orgs/get"},
		"GET /user":                                           {[]int{200}, goGitHub + "users.go:99; REST users/get-authenticated"},
		fakegithub.RouteRepoRuns:                              {[]int{200}, goGitHub + "actions_workflow_runs.go:186; REST actions/list-workflow-runs-for-repo"},
		"GET /repos/{owner}/{repo}/actions/runs/{run_id}":     {[]int{200}, goGitHub + "actions_workflow_runs.go:213; REST actions/get-workflow-run"},
		fakegithub.RouteRunJobs:                               {[]int{200}, goGitHub + "actions_workflow_jobs.go:76; REST actions/list-jobs-for-workflow-run"},
		"GET /repos/{owner}/{repo}/actions/jobs/{job_id}":     {[]int{200}, goGitHub + "actions_workflow_jobs.go:128; REST actions/get-job-for-workflow-run"},
		fakegithub.RouteRateLimit:                             {[]int{200}, goGitHub + "rate_limit.go:78; REST rate-limit/get"},
		// Not in go-github v88, actions/scaleset or the part of the REST
		// description read here: the shape is GitHub's changelog of
		// 2026-09-03 (operations actions/get-runner-version-deprecation-for-{repo,org}).
		fakegithub.RouteRepoRunnerDeprecation:                                  {[]int{200}, "GitHub changelog 2026-09-03 (no GitHub client code holds it yet)"},
		fakegithub.RouteOrgRunnerDeprecation:                                   {[]int{200}, "GitHub changelog 2026-09-03 (no GitHub client code holds it yet)"},
		"GET /enterprises/{enterprise}/actions/runners/deprecations/{version}": {[]int{200}, "GitHub changelog 2026-09-03 (no GitHub client code holds it yet)"},
		fakegithub.RouteAccessToken:                                            {[]int{201}, ssClient + "814; " + goGitHub + "apps.go:386"},
		// Any 2xx (client.go:894); 401 and 403 are retried (client.go:875).
		fakegithub.RouteRunnerRegistration:  {[]int{200, 201}, ssClient + "868-895"},
		fakegithub.RouteDownload:            {nil, "the fake's own: the download_url the downloads list names"},
		fakegithub.RouteLatestRunnerRelease: {[]int{200}, goGitHub + "repos_releases.go:131; REST repos/get-latest-release"},
		fakegithub.RouteScaleSets:           {[]int{200}, ssClient + "299 (body types.go:114)"},
		fakegithub.RouteScaleSet:            {[]int{200}, ssClient + "335"},
		fakegithub.RouteCreateScaleSet:      {[]int{200}, ssClient + "430"},
		fakegithub.RouteUpdateScaleSet:      {[]int{200}, ssClient + "466"},
		fakegithub.RouteDeleteScaleSet:      {[]int{204}, ssClient + "494"},
		fakegithub.RouteRunnerGroupByName:   {[]int{200}, ssClient + "351-363 (body types.go:76)"},
		fakegithub.RouteScaleSetJITConfig:   {[]int{200}, ssClient + "628 (body types.go:158)"},
		fakegithub.RouteAgent:               {[]int{200}, ssClient + "658; 404 AgentNotFoundException: errors.go:91"},
		fakegithub.RouteAgentByName:         {[]int{200}, ssClient + "688 (body types.go:147)"},
		fakegithub.RouteDeleteAgent:         {[]int{204}, ssClient + "725; JobStillRunningException: errors.go:93"},
		fakegithub.RouteCreateSession:       {[]int{200}, ssSession + "62"},
		fakegithub.RouteRefreshSession:      {[]int{200}, ssSession + "84"},
		fakegithub.RouteDeleteSession:       {[]int{204}, ssSession + "76"},
		fakegithub.RouteAcquireJobs:         {[]int{200}, ssSession + "282-287 (401: token expired)"},
		fakegithub.RouteMessages:            {[]int{200, 202}, ssSession + "150-166 (401: token expired)"},
		fakegithub.RouteDeleteMessage:       {[]int{204}, ssSession + "215-223 (401: token expired)"},
		"unknown REST route":                {nil, "404 Not Found"},
		"unknown actions route":             {nil, "404"},
	}
	const runner = "the fake runner's own protocol; the real runner: actions/runner "
	for route, from := range map[string]string{
		fakegithub.RouteRunnerToken:         "src/Sdk/WebApi/WebApi/OAuth/VssOAuthTokenHttpClient.cs:51",
		fakegithub.RouteRunnerCreateSession: "src/Sdk/DTGenerated/Generated/TaskAgentHttpClientBase.cs:744",
		fakegithub.RouteRunnerDeleteSession: "src/Sdk/DTGenerated/Generated/TaskAgentHttpClientBase.cs:773",
		fakegithub.RouteRunnerMessages:      "src/Sdk/DTGenerated/Generated/TaskAgentHttpClientBase.cs:458",
		fakegithub.RouteRunnerJobStart:      "src/Runner.Listener/JobDispatcher.cs (job request lock)",
		fakegithub.RouteRunnerJobRenew:      "src/Sdk/DTWebApi/WebApi/TaskAgentHttpClient.cs:93",
		fakegithub.RouteRunnerJobFinish:     "src/Sdk/DTWebApi/WebApi/TaskAgentHttpClient.cs:61",
	} {
		m[route] = routeSource{nil, runner + from}
	}
	for _, p := range []string{"/repos/{owner}/{repo}", "/orgs/{org}", "/enterprises/{enterprise}"} {
		m["GET "+p+"/actions/runners"] = routeSource{[]int{200}, goGitHub + "actions_runners.go:165; REST actions/list-self-hosted-runners-for-repo"}
		m["GET "+p+"/actions/runners/{runner_id}"] = routeSource{[]int{200}, goGitHub + "actions_runners.go:191"}
		m["DELETE "+p+"/actions/runners/{runner_id}"] = routeSource{[]int{204}, goGitHub + "actions_runners.go:240; 422 while busy"}
		m["POST "+p+"/actions/runners/registration-token"] = routeSource{[]int{201}, ssClient + "773; " + goGitHub + "actions_runners.go:114"}
		m["POST "+p+"/actions/runners/remove-token"] = routeSource{[]int{201}, goGitHub + "actions_runners.go:218; REST actions/create-remove-token-for-repo"}
		m["POST "+p+"/actions/runners/generate-jitconfig"] = routeSource{[]int{201}, goGitHub + "actions_runners.go:87; REST actions/generate-runner-jitconfig-for-repo: 201, 404, 409, 422"}
		m["GET "+p+"/actions/runners/downloads"] = routeSource{[]int{200}, goGitHub + "actions_runners.go:28"}
	}
	return m
}

func TestEveryRouteHasASource(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	src := routeSources()
	for _, r := range s.Routes() {
		assert.Contains(t, src, r, "route %q has no source in GitHub's code: add it to routeSources and docs/github-fake.md", r)
	}
	for r := range src {
		assert.Contains(t, s.Routes(), r, "routeSources names %q, which the fake does not serve", r)
	}
}

// assertConforms checks every 2xx the fake answered is one GitHub's client
// takes for that route, and that each of routes was answered with success
// at least once (so the test drove it).
func assertConforms(t *testing.T, s *fakegithub.Server, routes ...string) {
	t.Helper()
	src := routeSources()
	served := map[string]bool{}
	for _, c := range s.CallLog() {
		rs, ok := src[c.Route]
		if !ok {
			t.Errorf("route %q has no source", c.Route)
			continue
		}
		if c.Status < 200 || c.Status > 299 {
			continue
		}
		served[c.Route] = true
		if rs.ok != nil && !slices.Contains(rs.ok, c.Status) {
			t.Errorf("%s answered %d; GitHub's code (%s) takes %v", c.Route, c.Status, rs.from, rs.ok)
		}
	}
	for _, r := range routes {
		assert.True(t, served[r], "%s was never answered with success", r)
	}
}

func TestConformanceScaleSetClient(t *testing.T) {
	t.Parallel()
	// The admin token outlives the test; the queue token lapses when the
	// fake's clock is moved on, so the session refresh is driven.
	s := newServer(t, fakegithub.WithAdminTokenLifetime(24*time.Hour), fakegithub.WithQueueTokenLifetime(time.Minute))
	s.AddOrg("acme")
	org := rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}
	groupID := s.AddRunnerGroup(org, "builders")
	ctx := ctxT(t, 20*time.Second)
	c := scalesetClient(t, s, s.URL()+"/acme")

	// Registration token, then the admin connection, come first.
	g, err := c.GetRunnerGroupByName(ctx, "builders")
	require.NoError(t, err)
	assert.Equal(t, scaleset.RunnerGroup{ID: int(groupID), Name: "builders", Size: 0, IsDefault: false}, *g)
	assert.Equal(t, 1, s.Calls(fakegithub.RouteOrgRegistration))
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRunnerRegistration))

	none, err := c.GetRunnerScaleSet(ctx, g.ID, "linux")
	require.NoError(t, err)
	assert.Nil(t, none, "count 0 decodes to no scale set")

	created, err := c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
		Name: "linux", RunnerGroupID: g.ID, RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
	})
	require.NoError(t, err)
	require.NotZero(t, created.ID)
	assert.Equal(t, "linux", created.Name)
	assert.Equal(t, g.ID, created.RunnerGroupID)
	assert.Equal(t, "builders", created.RunnerGroupName)
	assert.Equal(t, []scaleset.Label{{Type: "System", Name: "linux"}}, created.Labels)
	assert.True(t, created.RunnerSetting.DisableUpdate)
	assert.False(t, created.CreatedOn.IsZero())
	assert.NotEmpty(t, created.RunnerJitConfigURL)
	require.NotNil(t, created.Statistics)

	byName, err := c.GetRunnerScaleSet(ctx, g.ID, "linux")
	require.NoError(t, err)
	require.NotNil(t, byName)
	assert.Equal(t, created.ID, byName.ID)
	byID, err := c.GetRunnerScaleSetByID(ctx, created.ID)
	require.NoError(t, err)
	assert.Equal(t, "linux", byID.Name)
	updated, err := c.UpdateRunnerScaleSet(ctx, created.ID, &scaleset.RunnerScaleSet{
		Name: "linux", RunnerGroupID: g.ID, Labels: []scaleset.Label{{Name: "linux"}, {Name: "gpu"}},
	})
	require.NoError(t, err)
	assert.Equal(t, []scaleset.Label{{Type: "System", Name: "linux"}, {Type: "System", Name: "gpu"}}, updated.Labels)
	assert.False(t, updated.RunnerSetting.DisableUpdate)

	jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "ss-1", WorkFolder: "_work"}, created.ID)
	require.NoError(t, err)
	require.NotNil(t, jit.Runner)
	assert.Equal(t, "ss-1", jit.Runner.Name)
	assert.Equal(t, created.ID, jit.Runner.RunnerScaleSetID)
	assert.NotZero(t, jit.Runner.ID)
	assert.NotEmpty(t, jit.EncodedJITConfig)
	_, err = c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "ss-1"}, created.ID)
	require.ErrorIs(t, err, scaleset.RunnerExistsError, "the service's AgentExistsException maps to RunnerExistsError")

	ref, err := c.GetRunner(ctx, jit.Runner.ID)
	require.NoError(t, err)
	assert.Equal(t, *jit.Runner, *ref)
	ref, err = c.GetRunnerByName(ctx, "ss-1")
	require.NoError(t, err)
	require.NotNil(t, ref)
	assert.Equal(t, *jit.Runner, *ref)
	ref, err = c.GetRunnerByName(ctx, "ss-9")
	require.NoError(t, err)
	assert.Nil(t, ref, "count 0 decodes to no runner")
	_, err = c.GetRunner(ctx, jit.Runner.ID+1000)
	require.ErrorIs(t, err, scaleset.RunnerNotFoundError, "the service's AgentNotFoundException maps to RunnerNotFoundError")

	session, err := c.MessageSessionClient(ctx, created.ID, "host-a")
	require.NoError(t, err)
	se := session.Session()
	assert.NotEqual(t, uuid.Nil, se.SessionID)
	assert.Equal(t, "host-a", se.OwnerName)
	require.NotNil(t, se.RunnerScaleSet)
	assert.Equal(t, created.ID, se.RunnerScaleSet.ID)
	assert.NotEmpty(t, se.MessageQueueURL)
	assert.NotEmpty(t, se.MessageQueueAccessToken)
	require.NotNil(t, se.Statistics)

	jobID := s.EnqueueJob(fakegithub.JobSpec{Repo: "acme/app", Labels: []string{"linux"}, Name: "build", Workflow: "acme/app/.github/workflows/ci.yml@refs/heads/main"})
	rec, _ := s.Job(jobID)
	msg, err := session.GetMessage(ctx, 0, 2)
	require.NoError(t, err)
	require.NotNil(t, msg)
	require.Len(t, msg.JobAvailableMessages, 1)
	av := msg.JobAvailableMessages[0]
	assert.Equal(t, scaleset.MessageTypeJobAvailable, av.MessageType)
	assert.Equal(t, rec.RequestID, av.RunnerRequestID)
	assert.Equal(t, "app", av.RepositoryName)
	assert.Equal(t, "acme", av.OwnerName)
	assert.Equal(t, "build", av.JobDisplayName)
	assert.Equal(t, rec.Workflow, av.JobWorkflowRef)
	assert.Equal(t, rec.RunID, av.WorkflowRunID)
	assert.Equal(t, []string{"linux"}, av.RequestLabels)
	assert.NotEmpty(t, av.JobID)
	assert.NotEmpty(t, av.AcquireJobURL)
	assert.False(t, av.QueueTime.IsZero())
	require.NotNil(t, msg.Statistics)
	assert.Equal(t, 1, msg.Statistics.TotalAvailableJobs)
	require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))

	acquired, err := session.AcquireJobs(ctx, []int64{av.RunnerRequestID})
	require.NoError(t, err)
	assert.Equal(t, []int64{av.RunnerRequestID}, acquired)

	// The queue token lapses: GetMessage sees 401, refreshes the session
	// (PATCH) and asks again, as session_client.go:107-119 does.
	s.Advance(2 * time.Minute)
	msg, err = session.GetMessage(ctx, msg.MessageID, 2)
	require.NoError(t, err)
	require.NotNil(t, msg)
	require.Len(t, msg.JobAssignedMessages, 1, "assigned while below the capacity sent")
	assert.Equal(t, rec.RequestID, msg.JobAssignedMessages[0].RunnerRequestID)
	assert.Equal(t, 1, msg.Statistics.TotalAssignedJobs)
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRefreshSession))
	assert.NotEqual(t, se.MessageQueueAccessToken, session.Session().MessageQueueAccessToken)
	require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))

	require.NoError(t, c.RemoveRunner(ctx, int64(jit.Runner.ID)))
	_, err = c.GetRunner(ctx, jit.Runner.ID)
	require.ErrorIs(t, err, scaleset.RunnerNotFoundError)
	require.NoError(t, session.Close(ctx))
	assert.Empty(t, s.Sessions())
	require.NoError(t, c.DeleteRunnerScaleSet(ctx, created.ID))
	assert.Empty(t, s.ScaleSets())

	assertConforms(t, s,
		fakegithub.RouteOrgRegistration, fakegithub.RouteRunnerRegistration, fakegithub.RouteRunnerGroupByName,
		fakegithub.RouteScaleSets, fakegithub.RouteCreateScaleSet, fakegithub.RouteScaleSet, fakegithub.RouteUpdateScaleSet,
		fakegithub.RouteScaleSetJITConfig, fakegithub.RouteAgent, fakegithub.RouteAgentByName, fakegithub.RouteDeleteAgent,
		fakegithub.RouteCreateSession, fakegithub.RouteRefreshSession, fakegithub.RouteDeleteSession,
		fakegithub.RouteMessages, fakegithub.RouteDeleteMessage, fakegithub.RouteAcquireJobs, fakegithub.RouteDeleteScaleSet)
}

// listenerScaler is a listener.Scaler that runs one in-process fake runner
// per wanted runner and keeps the messages the listener hands it.
type listenerScaler struct {
	t          *testing.T
	ctx        context.Context
	client     *scaleset.Client
	scaleSetID int

	mu        sync.Mutex
	launched  int
	alive     int
	started   []scaleset.JobStarted
	completed []scaleset.JobCompleted
	counts    []int
}

func (sc *listenerScaler) HandleJobStarted(_ context.Context, m *scaleset.JobStarted) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.started = append(sc.started, *m)
	return nil
}

func (sc *listenerScaler) HandleJobCompleted(_ context.Context, m *scaleset.JobCompleted) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.completed = append(sc.completed, *m)
	return nil
}

func (sc *listenerScaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.counts = append(sc.counts, count)
	for sc.alive < count {
		jit, err := sc.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{
			Name: fmt.Sprintf("listener-%d", sc.launched),
		}, sc.scaleSetID)
		if err != nil {
			return 0, err
		}
		sc.launched++
		sc.alive++
		code, _ := runInProcess(sc.t, sc.ctx, jit.EncodedJITConfig)
		go func() {
			<-code
			sc.mu.Lock()
			sc.alive--
			sc.mu.Unlock()
		}()
	}
	return sc.alive, nil
}

type statsRecorder struct {
	mu    sync.Mutex
	stats []scaleset.RunnerScaleSetStatistic
}

func (r *statsRecorder) RecordStatistics(st *scaleset.RunnerScaleSetStatistic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats = append(r.stats, *st)
}
func (r *statsRecorder) RecordJobStarted(*scaleset.JobStarted)     {}
func (r *statsRecorder) RecordJobCompleted(*scaleset.JobCompleted) {}
func (r *statsRecorder) RecordDesiredRunners(int)                  {}

func TestConformanceListener(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 20*time.Second)
	c := scalesetClient(t, s, s.URL()+"/"+repo)
	ss, err := c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "conform", RunnerGroupID: 1})
	require.NoError(t, err)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host-l")
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close(context.Background()) })

	const n, maxRunners = 4, 2
	for i := range n {
		s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"conform"}, Name: fmt.Sprintf("l-%d", i), Duration: 50 * time.Millisecond})
	}
	rec := &statsRecorder{}
	l, err := listener.New(session, listener.Config{ScaleSetID: ss.ID, MaxRunners: maxRunners}, listener.WithMetricsRecorder(rec))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	sc := &listenerScaler{t: t, ctx: runCtx, client: c, scaleSetID: ss.ID}
	errc := make(chan error, 1)
	go func() { errc <- l.Run(runCtx, sc) }()

	require.NoError(t, s.WaitJobsCompleted(ctx))
	require.NoError(t, s.WaitFor(ctx, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return len(sc.completed) == n
	}), "every JobCompleted reaches the scaler")
	stop()
	require.ErrorIs(t, <-errc, context.Canceled)

	byRequest := map[int64]fakegithub.JobRecord{}
	for _, j := range s.Jobs() {
		byRequest[j.RequestID] = j
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.Len(t, sc.started, n)
	for _, m := range sc.started {
		j, ok := byRequest[m.RunnerRequestID]
		require.True(t, ok, "JobStarted names request %d", m.RunnerRequestID)
		assert.Equal(t, scaleset.MessageTypeJobStarted, m.MessageType)
		assert.Equal(t, int(j.RunnerID), m.RunnerID)
		assert.Equal(t, j.RunnerName, m.RunnerName)
		assert.Equal(t, j.Name, m.JobDisplayName)
		assert.False(t, m.RunnerAssignTime.IsZero())
	}
	for _, m := range sc.completed {
		j := byRequest[m.RunnerRequestID]
		assert.Equal(t, scaleset.MessageTypeJobCompleted, m.MessageType)
		assert.Equal(t, fakegithub.ResultSucceeded, m.Result)
		assert.Equal(t, j.RunnerName, m.RunnerName)
		assert.False(t, m.FinishTime.IsZero())
	}
	assert.Zero(t, sc.counts[0], "no job was assigned when the session opened")
	for _, want := range sc.counts[1:] {
		assert.LessOrEqual(t, want, maxRunners, "totalAssignedJobs stays within the capacity the listener sent")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.NotEmpty(t, rec.stats)
	assertConforms(t, s, fakegithub.RouteCreateSession, fakegithub.RouteMessages, fakegithub.RouteDeleteMessage,
		fakegithub.RouteAcquireJobs, fakegithub.RouteScaleSetJITConfig)
}

func TestConformanceREST(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.AddEnterprise("bigcorp", "acme")
	ctx := ctxT(t, 20*time.Second)
	c := restClient(t, s, token)

	t.Run("RunnersPaginated", func(t *testing.T) {
		var ids []int64
		for i := range 5 {
			jit, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest(fmt.Sprintf("page-%d", i)))
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			r := jit.GetRunner()
			assert.Equal(t, fmt.Sprintf("page-%d", i), r.GetName())
			assert.Equal(t, "offline", r.GetStatus())
			require.Len(t, r.Labels, 3)
			assert.Equal(t, "read-only", r.Labels[0].GetType(), "self-hosted is GitHub's own label")
			assert.Equal(t, "custom", r.Labels[1].GetType())
			assert.NotEmpty(t, jit.GetEncodedJITConfig())
			ids = append(ids, r.GetID())
		}
		opts := &gh.ListRunnersOptions{ListOptions: gh.ListOptions{PerPage: 2}}
		var got []int64
		for pages := 0; ; pages++ {
			require.Less(t, pages, 3)
			rs, resp, err := c.Actions.ListRunners(ctx, owner, name, opts)
			require.NoError(t, err)
			assert.Equal(t, 5, rs.TotalCount)
			if resp.NextPage != 0 {
				assert.Equal(t, 3, resp.LastPage, "the Link header names the last page")
			}
			for _, r := range rs.Runners {
				got = append(got, r.GetID())
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		assert.Equal(t, ids, got, "every runner once, in id order, across the Link pages")

		one, _, err := c.Actions.ListRunners(ctx, owner, name, &gh.ListRunnersOptions{Name: gh.Ptr("page-3")})
		require.NoError(t, err)
		require.Equal(t, 1, one.TotalCount)
		assert.Equal(t, ids[3], one.Runners[0].GetID())
		r, _, err := c.Actions.GetRunner(ctx, owner, name, ids[3])
		require.NoError(t, err)
		assert.Equal(t, "page-3", r.GetName())
		assert.False(t, r.GetBusy())

		resp, err := c.Actions.RemoveRunner(ctx, owner, name, ids[3])
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		_, resp, err = c.Actions.GetRunner(ctx, owner, name, ids[3])
		var er *gh.ErrorResponse
		require.ErrorAs(t, err, &er)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		assert.Equal(t, "Not Found", er.Message)
	})

	t.Run("RemoveBusy", func(t *testing.T) {
		jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("busy-1", "self-hosted", "busy"))
		require.NoError(t, err)
		job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "busy"}, Duration: 30 * time.Second})
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		code, out := runInProcess(t, runCtx, jit.GetEncodedJITConfig())
		require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))
		resp, err := c.Actions.RemoveRunner(ctx, owner, name, jit.GetRunner().GetID())
		var er *gh.ErrorResponse
		require.ErrorAs(t, err, &er)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		// The message ARC quotes (runner_graceful_stop.go) from GitHub.
		assert.Equal(t, `Bad request - Runner "busy-1" is still running a job"`, er.Message)
		stop()
		assert.Equal(t, 0, <-code, out.String())
	})

	t.Run("Tokens", func(t *testing.T) {
		before := time.Now()
		reg, resp, err := c.Actions.CreateRegistrationToken(ctx, owner, name)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.NotEmpty(t, reg.GetToken())
		assert.WithinDuration(t, before.Add(time.Hour), reg.GetExpiresAt().Time, 5*time.Second, "registration tokens last an hour")
		rem, resp, err := c.Actions.CreateRemoveToken(ctx, owner, name)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.NotEmpty(t, rem.GetToken())
		org, _, err := c.Actions.CreateOrganizationRegistrationToken(ctx, "acme")
		require.NoError(t, err)
		assert.NotEqual(t, reg.GetToken(), org.GetToken())
		ent, _, err := c.Enterprise.CreateRegistrationToken(ctx, "bigcorp")
		require.NoError(t, err)
		assert.NotEmpty(t, ent.GetToken())
	})

	t.Run("OrgAndEnterprise", func(t *testing.T) {
		groups, _, err := c.Actions.ListOrganizationRunnerGroups(ctx, "acme", nil)
		require.NoError(t, err)
		require.Equal(t, 1, groups.TotalCount)
		assert.Equal(t, int64(1), groups.RunnerGroups[0].GetID())
		assert.True(t, groups.RunnerGroups[0].GetDefault())
		eg, _, err := c.Enterprise.ListRunnerGroups(ctx, "bigcorp", nil)
		require.NoError(t, err)
		require.Len(t, eg.RunnerGroups, 1)
		assert.Equal(t, rm.DefaultRunnerGroup, eg.RunnerGroups[0].GetName())

		oj, resp, err := c.Actions.GenerateOrgJITConfig(ctx, "acme", jitRequest("org-1"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		ors, _, err := c.Actions.ListOrganizationRunners(ctx, "acme", nil)
		require.NoError(t, err)
		require.Equal(t, 1, ors.TotalCount)
		r, _, err := c.Actions.GetOrganizationRunner(ctx, "acme", oj.GetRunner().GetID())
		require.NoError(t, err)
		assert.Equal(t, "org-1", r.GetName())
		resp, err = c.Actions.RemoveOrganizationRunner(ctx, "acme", oj.GetRunner().GetID())
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)

		ej, _, err := c.Enterprise.GenerateEnterpriseJITConfig(ctx, "bigcorp", jitRequest("ent-1"))
		require.NoError(t, err)
		ers, _, err := c.Enterprise.ListRunners(ctx, "bigcorp", nil)
		require.NoError(t, err)
		require.Equal(t, 1, ers.TotalCount)
		r, _, err = c.Enterprise.GetRunner(ctx, "bigcorp", ej.GetRunner().GetID())
		require.NoError(t, err)
		assert.Equal(t, "ent-1", r.GetName())
		resp, err = c.Enterprise.RemoveRunner(ctx, "bigcorp", ej.GetRunner().GetID())
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	})

	t.Run("Downloads", func(t *testing.T) {
		for _, list := range []func() ([]*gh.RunnerApplicationDownload, *gh.Response, error){
			func() ([]*gh.RunnerApplicationDownload, *gh.Response, error) {
				return c.Actions.ListRunnerApplicationDownloads(ctx, owner, name)
			},
			func() ([]*gh.RunnerApplicationDownload, *gh.Response, error) {
				return c.Actions.ListOrganizationRunnerApplicationDownloads(ctx, "acme")
			},
			func() ([]*gh.RunnerApplicationDownload, *gh.Response, error) {
				return c.Enterprise.ListRunnerApplicationDownloads(ctx, "bigcorp")
			},
		} {
			ds, _, err := list()
			require.NoError(t, err)
			i := slices.IndexFunc(ds, func(d *gh.RunnerApplicationDownload) bool {
				return d.GetOS() == "linux" && d.GetArchitecture() == "x64"
			})
			require.GreaterOrEqual(t, i, 0, "linux x64 is offered")
			d := ds[i]
			assert.Equal(t, "actions-runner-linux-x64-"+fakegithub.RunnerVersion+".tar.gz", d.GetFilename())
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.GetDownloadURL(), nil)
			require.NoError(t, err)
			res, err := s.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)
			sum := sha256.Sum256(body)
			assert.Equal(t, d.GetSHA256Checksum(), hex.EncodeToString(sum[:]), "the package is what its checksum says")
		}
		rel, _, err := c.Repositories.GetLatestRelease(ctx, "actions", "runner")
		require.NoError(t, err)
		assert.Equal(t, "v"+fakegithub.RunnerVersion, rel.GetTagName())
		assert.NotEmpty(t, rel.Assets)
	})

	t.Run("RunsAndJobs", func(t *testing.T) {
		id := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "nobody"}, Name: "wait"})
		rec, _ := s.Job(id)
		runs, _, err := c.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, &gh.ListWorkflowRunsOptions{Status: "queued"})
		require.NoError(t, err)
		require.Equal(t, 1, runs.GetTotalCount())
		run := runs.WorkflowRuns[0]
		assert.Equal(t, rec.RunID, run.GetID())
		assert.Equal(t, "queued", run.GetStatus())
		assert.Empty(t, run.GetConclusion())
		assert.Equal(t, repo, run.GetRepository().GetFullName())
		done, _, err := c.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, &gh.ListWorkflowRunsOptions{Status: "in_progress"})
		require.NoError(t, err)
		assert.Zero(t, done.GetTotalCount())

		jobs, _, err := c.Actions.ListWorkflowJobs(ctx, owner, name, rec.RunID, nil)
		require.NoError(t, err)
		require.Equal(t, 1, jobs.GetTotalCount())
		j := jobs.Jobs[0]
		assert.Equal(t, id, j.GetID())
		assert.Equal(t, rec.RunID, j.GetRunID())
		assert.Equal(t, "queued", j.GetStatus())
		assert.Equal(t, []string{"self-hosted", "nobody"}, j.Labels)
		assert.Nil(t, j.RunnerID, "runner_id is null while queued")
		assert.Nil(t, j.RunnerName)
		assert.Nil(t, j.CompletedAt)
		require.NotNil(t, j.StartedAt, "started_at is not nullable in GitHub's job schema")
		assert.Equal(t, j.GetCreatedAt(), j.GetStartedAt(), "a queued job's started_at is its creation")
		assert.Equal(t, "wait", j.GetName())
		one, _, err := c.Actions.GetWorkflowJobByID(ctx, owner, name, id)
		require.NoError(t, err)
		assert.Equal(t, j.GetID(), one.GetID())
	})

	t.Run("RateLimit", func(t *testing.T) {
		limits, resp, err := c.RateLimit.Get(ctx)
		require.NoError(t, err)
		require.NotNil(t, limits.Core)
		assert.Equal(t, 5000, limits.Core.Limit)
		assert.Equal(t, limits.Core.Remaining, resp.Rate.Remaining, "the body and the x-ratelimit headers agree")
		assert.True(t, limits.Core.Reset.After(time.Now()), "the reset is ahead")
		_, resp2, err := c.RateLimit.Get(ctx)
		require.NoError(t, err)
		assert.Equal(t, resp.Rate.Remaining, resp2.Rate.Remaining, "/rate_limit is free")
	})

	assertConforms(t, s,
		fakegithub.RouteRepoJITConfig, fakegithub.RouteRepoRunners, fakegithub.RouteRepoRunner, fakegithub.RouteRepoDeleteRunner,
		fakegithub.RouteRepoRegistration, "POST /repos/{owner}/{repo}/actions/runners/remove-token",
		fakegithub.RouteOrgRegistration, "POST /enterprises/{enterprise}/actions/runners/registration-token",
		fakegithub.RouteOrgRunnerGroups, "GET /enterprises/{enterprise}/actions/runner-groups",
		fakegithub.RouteOrgJITConfig, fakegithub.RouteOrgRunners, "GET /orgs/{org}/actions/runners/{runner_id}", fakegithub.RouteOrgDeleteRunner,
		fakegithub.RouteEnterpriseJITConfig, "GET /enterprises/{enterprise}/actions/runners", "GET /enterprises/{enterprise}/actions/runners/{runner_id}",
		"DELETE /enterprises/{enterprise}/actions/runners/{runner_id}",
		fakegithub.RouteRepoDownloads, "GET /orgs/{org}/actions/runners/downloads", "GET /enterprises/{enterprise}/actions/runners/downloads",
		fakegithub.RouteDownload, fakegithub.RouteLatestRunnerRelease,
		fakegithub.RouteRepoRuns, fakegithub.RouteRunJobs, "GET /repos/{owner}/{repo}/actions/jobs/{job_id}", fakegithub.RouteRateLimit)
}
