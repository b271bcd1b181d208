package fakegithub_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
)

var owner, name, _ = strings.Cut(repo, "/")

func jitRequest(runner string, labels ...string) *gh.GenerateJITConfigRequest {
	if len(labels) == 0 {
		labels = []string{"self-hosted", "linux", "x64"}
	}
	return &gh.GenerateJITConfigRequest{Name: runner, RunnerGroupID: 1, Labels: labels}
}

// runInProcess runs the fake runner's listener in this process, rooted in a
// temp dir, and returns its exit code channel and output.
func runInProcess(t *testing.T, ctx context.Context, jit string) (<-chan int, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	code := make(chan int, 1)
	done := make(chan struct{})
	root := t.TempDir()
	go func() {
		defer close(done)
		code <- fakerunner.Run(ctx, fakerunner.Config{Root: root, JITConfig: jit, Stdout: out, GiveUpAfter: 5 * time.Second})
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("in-process runner did not stop; output:\n%s", out)
		}
	})
	return code, out
}

func TestGenerateJITConfig(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.AddOrg("acme")
	group := s.AddRunnerGroup(rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}, "gpu")
	s.AddEnterprise("big", "acme")
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)

	t.Run("Created", func(t *testing.T) {
		jit, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-a"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		r := jit.GetRunner()
		assert.Equal(t, "rm-a", r.GetName())
		assert.Equal(t, "offline", r.GetStatus())
		assert.False(t, r.GetBusy())
		require.Len(t, r.Labels, 3)
		assert.Equal(t, "self-hosted", r.Labels[0].GetName())

		// The config is base64 of a JSON map of the runner's files.
		raw, err := base64.StdEncoding.DecodeString(jit.GetEncodedJITConfig())
		require.NoError(t, err)
		var files map[string]string
		require.NoError(t, json.Unmarshal(raw, &files))
		assert.ElementsMatch(t, []string{".runner", ".credentials", ".credentials_rsaparams"}, keys(files))
		b, err := base64.StdEncoding.DecodeString(files[".runner"])
		require.NoError(t, err)
		var runnerFile map[string]any
		require.NoError(t, json.Unmarshal(b, &runnerFile))
		assert.EqualValues(t, r.GetID(), runnerFile["agentId"])
		assert.Equal(t, "rm-a", runnerFile["agentName"])
		assert.Equal(t, s.ActionsURL(), runnerFile["serverUrl"])
		assert.Equal(t, s.URL()+"/"+repo, runnerFile["gitHubUrl"])
	})
	t.Run("NameExists", func(t *testing.T) {
		_, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("RM-A"))
		require.Error(t, err)
		assert.Equal(t, http.StatusConflict, resp.StatusCode)
	})
	t.Run("UnknownRepo", func(t *testing.T) {
		_, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, "nope", jitRequest("rm-b"))
		require.Error(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
	t.Run("UnknownGroup", func(t *testing.T) {
		req := jitRequest("rm-b")
		req.RunnerGroupID = group // a group of the org, not of the repo
		_, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, req)
		require.Error(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
	for _, tc := range []struct {
		name   string
		labels []string
	}{
		{"NoLabels", []string{}},
		{"BadLabel", []string{"self-hosted", "has space"}},
		{"TooManyLabels", make([]string, 101)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.labels {
				if tc.labels[i] == "" {
					tc.labels[i] = fmt.Sprintf("l%d", i)
				}
			}
			req := jitRequest("rm-c")
			req.Labels = tc.labels
			_, resp, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, req)
			require.Error(t, err)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		})
	}
	t.Run("OrgGroup", func(t *testing.T) {
		groups, _, err := c.Actions.ListOrganizationRunnerGroups(ctx, "acme", nil)
		require.NoError(t, err)
		require.Equal(t, 2, groups.TotalCount)
		assert.Equal(t, "Default", groups.RunnerGroups[0].GetName())
		assert.True(t, groups.RunnerGroups[0].GetDefault())
		assert.Equal(t, group, groups.RunnerGroups[1].GetID())
		req := jitRequest("rm-org")
		req.RunnerGroupID = group
		jit, _, err := c.Actions.GenerateOrgJITConfig(ctx, "acme", req)
		require.NoError(t, err)
		runners, _, err := c.Actions.ListOrganizationRunners(ctx, "acme", nil)
		require.NoError(t, err)
		require.Equal(t, 1, runners.TotalCount)
		assert.Equal(t, jit.GetRunner().GetID(), runners.Runners[0].GetID())
	})
	t.Run("Enterprise", func(t *testing.T) {
		jit, resp, err := c.Enterprise.GenerateEnterpriseJITConfig(ctx, "big", jitRequest("rm-ent"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, "rm-ent", jit.GetRunner().GetName())
		_, resp, err = c.Enterprise.GenerateEnterpriseJITConfig(ctx, "small", jitRequest("rm-ent"))
		require.Error(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestListRunnersPaginates(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)
	for i := range 5 {
		_, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest(fmt.Sprintf("rm-%d", i)))
		require.NoError(t, err)
	}
	var names []string
	opts := &gh.ListRunnersOptions{ListOptions: gh.ListOptions{PerPage: 2}}
	pages := 0
	for {
		runners, resp, err := c.Actions.ListRunners(ctx, owner, name, opts)
		require.NoError(t, err)
		pages++
		assert.Equal(t, 5, runners.TotalCount)
		assert.Equal(t, 3, resp.LastPage+boolInt(resp.NextPage == 0)*pages, "Link names the last page")
		for _, r := range runners.Runners {
			names = append(names, r.GetName())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	assert.Equal(t, 3, pages)
	assert.Equal(t, []string{"rm-0", "rm-1", "rm-2", "rm-3", "rm-4"}, names)

	t.Run("ByName", func(t *testing.T) {
		runners, _, err := c.Actions.ListRunners(ctx, owner, name, &gh.ListRunnersOptions{Name: gh.Ptr("rm-3")})
		require.NoError(t, err)
		require.Equal(t, 1, runners.TotalCount)
		assert.Equal(t, "rm-3", runners.Runners[0].GetName())
	})
	t.Run("PerPageCappedAt100", func(t *testing.T) {
		for i := 5; i < 105; i++ {
			_, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest(fmt.Sprintf("rm-%d", i)))
			require.NoError(t, err)
		}
		runners, resp, err := c.Actions.ListRunners(ctx, owner, name, &gh.ListRunnersOptions{ListOptions: gh.ListOptions{PerPage: 500}})
		require.NoError(t, err)
		assert.Len(t, runners.Runners, 100)
		assert.Equal(t, 2, resp.NextPage)
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestGetAndRemoveRunner(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 20*time.Second)

	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-busy"))
	require.NoError(t, err)
	id := jit.GetRunner().GetID()
	got, _, err := c.Actions.GetRunner(ctx, owner, name, id)
	require.NoError(t, err)
	assert.Equal(t, "rm-busy", got.GetName())
	_, resp, err := c.Actions.GetRunner(ctx, owner, name, id+1000)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A runner running a job cannot be removed.
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "linux"}, Duration: 30 * time.Second})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	code, out := runInProcess(t, runCtx, jit.GetEncodedJITConfig())
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))
	got, _, err = c.Actions.GetRunner(ctx, owner, name, id)
	require.NoError(t, err)
	assert.True(t, got.GetBusy())
	assert.Equal(t, "online", got.GetStatus())
	assert.Equal(t, runtimeOS(), got.GetOS())
	resp, err = c.Actions.RemoveRunner(ctx, owner, name, id)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, err.Error(), "still running a job")

	// Stopped mid-job, the runner reports the job canceled and exits 0.
	stop()
	assert.Equal(t, 0, <-code, out.String())
	j, _ := s.Job(job)
	assert.Equal(t, fakegithub.ResultCanceled, j.Result)
	_, resp, err = c.Actions.GetRunner(ctx, owner, name, id)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "an ephemeral runner goes with its job")

	t.Run("Idle", func(t *testing.T) {
		jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-idle"))
		require.NoError(t, err)
		resp, err := c.Actions.RemoveRunner(ctx, owner, name, jit.GetRunner().GetID())
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		resp, err = c.Actions.RemoveRunner(ctx, owner, name, jit.GetRunner().GetID())
		require.Error(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func runtimeOS() string { return runtime.GOOS + " " + runtime.GOARCH }

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)

	_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
	require.NoError(t, err)
	assert.Equal(t, 5000, resp.Rate.Limit)
	assert.Equal(t, 4999, resp.Rate.Remaining)
	assert.Equal(t, 1, resp.Rate.Used)
	assert.Equal(t, "core", resp.Rate.Resource)
	assert.WithinDuration(t, time.Now().Add(time.Hour), resp.Rate.Reset.Time, 2*time.Second)

	t.Run("RateLimitEndpointIsFree", func(t *testing.T) {
		limits, _, err := c.RateLimit.Get(ctx)
		require.NoError(t, err)
		assert.Equal(t, 4999, limits.Core.Remaining)
		_, remaining, _ := s.RateLimit()
		assert.Equal(t, 4999, remaining)
	})
	t.Run("NotModifiedIsFree", func(t *testing.T) {
		req, err := c.NewRequest(ctx, http.MethodGet, "repos/"+repo+"/actions/runners", nil)
		require.NoError(t, err)
		first, err := c.Do(req, nil)
		require.NoError(t, err)
		etag := first.Header.Get("ETag")
		require.NotEmpty(t, etag)
		before := first.Rate.Remaining
		for range 3 {
			req, err := c.NewRequest(ctx, http.MethodGet, "repos/"+repo+"/actions/runners", nil)
			require.NoError(t, err)
			req.Header.Set("If-None-Match", etag)
			resp, _ := c.Do(req, nil)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusNotModified, resp.StatusCode)
			assert.Equal(t, before, resp.Rate.Remaining, "a 304 costs nothing")
		}
		// A change gives a new ETag and a 200.
		_, _, err = c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-new"))
		require.NoError(t, err)
		req, err = c.NewRequest(ctx, http.MethodGet, "repos/"+repo+"/actions/runners", nil)
		require.NoError(t, err)
		req.Header.Set("If-None-Match", etag)
		var runners gh.Runners
		resp, err := c.Do(req, &runners)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.NotEqual(t, etag, resp.Header.Get("ETag"))
		assert.Equal(t, 1, runners.TotalCount)
	})
}

func TestPrimaryRateLimit(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithRateLimit(3), fakegithub.WithRateLimitWindow(1500*time.Millisecond))
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)
	var last *gh.Response
	for range 3 {
		_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
		require.NoError(t, err)
		last = resp
	}
	assert.Equal(t, 0, last.Rate.Remaining, "the last unit spent says so")

	// go-github, having read remaining 0, refuses to send until the reset.
	_, _, err := c.Actions.ListRunners(ctx, owner, name, nil)
	var rle *gh.RateLimitError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, 3, s.Calls(fakegithub.RouteRepoRunners), "no request while the budget is exhausted")

	// A client that sends anyway gets 403 with remaining 0.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL()+"repos/"+repo+"/actions/runners", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+token)
	raw, err := s.Client().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(raw.Body)
	_ = raw.Body.Close()
	assert.Equal(t, http.StatusForbidden, raw.StatusCode)
	assert.Equal(t, "0", raw.Header.Get("X-RateLimit-Remaining"))
	assert.Contains(t, string(body), "rate limit exceeded")
	reset, err := strconv.ParseInt(raw.Header.Get("X-RateLimit-Reset"), 10, 64)
	require.NoError(t, err)
	_, _, fakeReset := s.RateLimit()
	assert.Equal(t, fakeReset.Unix(), reset)

	// After the reset the budget is full again (waiting for it is the
	// contract under test).
	time.Sleep(time.Until(time.Unix(reset, 0)) + 10*time.Millisecond)
	_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, resp.Rate.Remaining)
}

func TestSecondaryRateLimit(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)
	s.SecondaryLimit(time.Second, 1)

	started := time.Now()
	_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
	var abuse *gh.AbuseRateLimitError
	require.ErrorAs(t, err, &abuse)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.NotNil(t, abuse.RetryAfter)
	assert.Equal(t, time.Second, *abuse.RetryAfter)

	// A client that does not wait is refused again, and it is counted.
	hc := s.Client()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL()+"repos/"+repo+"/actions/runners", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	raw, err := hc.Do(req)
	require.NoError(t, err)
	_ = raw.Body.Close()
	assert.Equal(t, http.StatusForbidden, raw.StatusCode)
	assert.Equal(t, "1", raw.Header.Get("Retry-After"))
	assert.Equal(t, 1, s.SecondaryLimitViolations())

	// go-github waits out the retry-after itself: it refuses locally, and
	// the fake sees no more violations.
	_, _, err = c.Actions.ListRunners(ctx, owner, name, nil)
	require.ErrorAs(t, err, &abuse)
	assert.Equal(t, 1, s.SecondaryLimitViolations())

	// Once retry-after elapsed (go-github counts it from when it read the
	// answer), requests go through, and none came early.
	require.Eventually(t, func() bool {
		_, _, err := c.Actions.ListRunners(ctx, owner, name, nil)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(started), time.Second)
	assert.Equal(t, 1, s.SecondaryLimitViolations())
}

func TestSecondaryRateLimit429(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second, Times: 1})
	_, resp, err := restClient(t, s, token).Actions.ListRunners(ctxT(t, 10*time.Second), owner, name, nil)
	var abuse *gh.AbuseRateLimitError
	require.ErrorAs(t, err, &abuse)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotNil(t, abuse.RetryAfter)
	assert.Equal(t, 2*time.Second, *abuse.RetryAfter)
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct {
		name, token string
	}{
		{"UnknownToken", "ghp_not_known"},
		{"RevokedToken", "ghp_revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.AddToken("ghp_revoked")
			s.RevokeToken("ghp_revoked")
			_, resp, err := restClient(t, s, tc.token).Actions.ListRunners(ctx, owner, name, nil)
			var er *gh.ErrorResponse
			require.ErrorAs(t, err, &er)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.Equal(t, "Bad credentials", er.Message)
		})
	}
	t.Run("MissingScope", func(t *testing.T) {
		s.AddOrg("acme")
		s.AddTokenWithScopes("ghp_repo_only", fakegithub.ScopeRepo)
		c := restClient(t, s, "ghp_repo_only")
		_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
		require.NoError(t, err)
		assert.Equal(t, "repo", resp.Header.Get("X-OAuth-Scopes"))
		_, resp, err = c.Actions.ListOrganizationRunners(ctx, "acme", nil)
		require.Error(t, err)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Equal(t, "admin:org", resp.Header.Get("X-Accepted-OAuth-Scopes"))
		_, resp, err = restClient(t, s, token).Actions.ListOrganizationRunners(ctx, "acme", nil)
		require.NoError(t, err)
		assert.Equal(t, "repo, admin:org, manage_runners:enterprise", resp.Header.Get("X-OAuth-Scopes"))
	})
	t.Run("NoToken", func(t *testing.T) {
		resp, err := s.Client().Get(s.APIURL() + "repos/" + repo + "/actions/runners")
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	t.Run("UnknownScope", func(t *testing.T) {
		c := restClient(t, s, token)
		_, resp, err := c.Actions.ListOrganizationRunners(ctx, "nobody", nil)
		require.Error(t, err)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestWorkflowRunsAndJobs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 20*time.Second)
	labels := []string{"self-hosted", "linux"}
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: labels, Name: "unit", Duration: 2 * time.Second})

	runs, _, err := c.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, &gh.ListWorkflowRunsOptions{Status: "queued"})
	require.NoError(t, err)
	require.Equal(t, 1, runs.GetTotalCount())
	run := runs.WorkflowRuns[0]
	assert.Equal(t, "queued", run.GetStatus())
	jobs, _, err := c.Actions.ListWorkflowJobs(ctx, owner, name, run.GetID(), nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 1)
	wj := jobs.Jobs[0]
	assert.Equal(t, job, wj.GetID())
	assert.Equal(t, labels, wj.Labels)
	assert.Equal(t, "queued", wj.GetStatus())
	assert.Nil(t, wj.RunnerID, "no runner while queued")
	assert.Nil(t, wj.RunnerName)

	// Handed to a runner whose start report fails: still queued, no runner.
	s.Fault(fakegithub.RouteRunnerJobStart, fakegithub.Fault{Status: http.StatusInternalServerError})
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1"))
	require.NoError(t, err)
	code, out := runInProcess(t, ctx, jit.GetEncodedJITConfig())
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Calls(fakegithub.RouteRunnerJobStart) > 0 }))
	rec, _ := s.Job(job)
	assert.Equal(t, "rm-1", rec.RunnerName, "the fake knows whom it handed the job")
	wj, _, err = c.Actions.GetWorkflowJobByID(ctx, owner, name, job)
	require.NoError(t, err)
	assert.Equal(t, "queued", wj.GetStatus())
	assert.Nil(t, wj.RunnerID, "no runner until it is in progress")
	assert.Nil(t, wj.RunnerName)
	s.ClearFaults()

	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))
	wj, _, err = c.Actions.GetWorkflowJobByID(ctx, owner, name, job)
	require.NoError(t, err)
	assert.Equal(t, "in_progress", wj.GetStatus())
	assert.Equal(t, "rm-1", wj.GetRunnerName())
	assert.Equal(t, jit.GetRunner().GetID(), wj.GetRunnerID())
	assert.Equal(t, 0, <-code, out.String())
	rec, _ = s.Job(job)
	assert.Equal(t, 1, rec.Starts)
	assert.Equal(t, jit.GetRunner().GetID(), rec.RunnerID)
	assert.Equal(t, "rm-1", rec.RunnerName)

	runs, _, err = c.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, &gh.ListWorkflowRunsOptions{Status: "queued"})
	require.NoError(t, err)
	assert.Equal(t, 0, runs.GetTotalCount())
	runs, _, err = c.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, &gh.ListWorkflowRunsOptions{Status: "completed"})
	require.NoError(t, err)
	require.Equal(t, 1, runs.GetTotalCount())
	assert.Equal(t, "success", runs.WorkflowRuns[0].GetConclusion())
	wj, _, err = c.Actions.GetWorkflowJobByID(ctx, owner, name, job)
	require.NoError(t, err)
	assert.Equal(t, "completed", wj.GetStatus())
	assert.Equal(t, "success", wj.GetConclusion())
	assert.Equal(t, "rm-1", wj.GetRunnerName())
	assert.Equal(t, jit.GetRunner().GetID(), wj.GetRunnerID())
	assert.Equal(t, "Default", wj.GetRunnerGroupName())
	assert.False(t, wj.GetStartedAt().IsZero())
}

func TestDownloads(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)
	list, _, err := c.Actions.ListRunnerApplicationDownloads(ctx, owner, name)
	require.NoError(t, err)
	var linux *gh.RunnerApplicationDownload
	for _, d := range list {
		if d.GetOS() == "linux" && d.GetArchitecture() == "x64" {
			linux = d
		}
	}
	require.NotNil(t, linux)
	assert.Equal(t, "actions-runner-linux-x64-"+fakegithub.RunnerVersion+".tar.gz", linux.GetFilename())

	get := func() []byte {
		resp, err := s.Client().Get(linux.GetDownloadURL())
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}
	body := get()
	sum := sha256.Sum256(body)
	assert.Equal(t, linux.GetSHA256Checksum(), hex.EncodeToString(sum[:]))
	gz, err := gzip.NewReader(strings.NewReader(string(body)))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
	assert.Contains(t, names, "bin/Runner.Listener")
	assert.Contains(t, names, "run.sh")

	t.Run("Corrupted", func(t *testing.T) {
		s.Fault(fakegithub.RouteDownload, fakegithub.Fault{Status: http.StatusOK, Body: "not a tarball", Times: 1})
		bad := get()
		sum := sha256.Sum256(bad)
		assert.NotEqual(t, linux.GetSHA256Checksum(), hex.EncodeToString(sum[:]))
		assert.Equal(t, body, get(), "the fault hit once")
	})
}

func TestRegistrationToken(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 10*time.Second)
	tok, resp, err := c.Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.NotEmpty(t, tok.GetToken())
	assert.WithinDuration(t, time.Now().Add(time.Hour), tok.GetExpiresAt().Time, 5*time.Second)
	rt, _, err := c.Actions.CreateRemoveToken(ctx, owner, name)
	require.NoError(t, err)
	assert.NotEqual(t, tok.GetToken(), rt.GetToken())
}
