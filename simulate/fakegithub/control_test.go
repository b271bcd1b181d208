package fakegithub_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fault  fakegithub.Fault
		status int // of the first call; 0 for a transport error
	}{
		{"Status", fakegithub.Fault{Status: http.StatusBadGateway, Times: 2}, http.StatusBadGateway},
		{"Drop", fakegithub.Fault{Drop: true, Times: 2}, 0},
		{"RetryAfter", fakegithub.Fault{Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond, Times: 2}, http.StatusTooManyRequests},
		{"Latency", fakegithub.Fault{Latency: 150 * time.Millisecond, Times: 2}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t, 10*time.Second) // from when the subtest runs, not when it was queued
			s := newServer(t)
			s.Fault(fakegithub.RouteRepoRunners, tc.fault)
			get := func() (*http.Response, time.Duration, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL()+"repos/"+repo+"/actions/runners", nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+token)
				start := time.Now()
				resp, err := s.Client().Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				return resp, time.Since(start), err
			}
			for range 2 {
				resp, took, err := get()
				if tc.status == 0 {
					require.Error(t, err)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode)
				if tc.fault.RetryAfter > 0 {
					assert.Equal(t, "2", resp.Header.Get("Retry-After"))
				}
				if tc.fault.Latency > 0 {
					assert.GreaterOrEqual(t, took, tc.fault.Latency)
				}
			}
			resp, _, err := get()
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode, "the fault hit twice, then the route works")
			assert.Equal(t, 3, s.Calls(fakegithub.RouteRepoRunners))
		})
	}
	t.Run("AllRoutesUntilCleared", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		s := newServer(t)
		s.Fault(fakegithub.FaultAll, fakegithub.Fault{Status: http.StatusInternalServerError})
		c := restClient(t, s, token)
		for range 3 {
			_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
			require.Error(t, err)
			assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		}
		_, resp, err := c.RateLimit.Get(ctx)
		require.Error(t, err)
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		_, remaining, _ := s.RateLimit()
		assert.Equal(t, 5000, remaining, "faulted answers cost nothing")
		s.ClearFaults()
		_, _, err = c.Actions.ListRunners(ctx, owner, name, nil)
		require.NoError(t, err)
	})
}

func TestCallCounters(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	c := restClient(t, s, token)
	ctx := ctxT(t, 20*time.Second)
	assert.Contains(t, s.Routes(), fakegithub.RouteRepoJITConfig)
	assert.Contains(t, s.Routes(), fakegithub.RouteMessages)

	s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "linux"}})
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1"))
	require.NoError(t, err)
	p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
	require.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())

	assert.Equal(t, 1, s.Calls(fakegithub.RouteRepoJITConfig))
	assert.Equal(t, 1, s.CallsREST())
	assert.Equal(t, 0, s.CallsScaleSet())
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRunnerToken))
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRunnerCreateSession))
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRunnerJobStart))
	assert.Equal(t, 1, s.Calls(fakegithub.RouteRunnerJobFinish))
	assert.GreaterOrEqual(t, s.Calls(fakegithub.RouteRunnerMessages), 1)
	assert.Equal(t, s.CallsTotal(), s.CallsREST()+s.CallsRunner())
	log := s.CallLog()
	require.Len(t, log, s.CallsTotal())
	assert.Equal(t, fakegithub.RouteRepoJITConfig, log[0].Route)
	assert.Equal(t, http.StatusCreated, log[0].Status)
	assert.Equal(t, fakegithub.KindREST, log[0].Kind)
	assert.Equal(t, "/repos/"+repo+"/actions/runners/generate-jitconfig", log[0].Path)

	s.ResetCalls()
	assert.Zero(t, s.CallsTotal())
	assert.Empty(t, s.CallLog())
}

// webhookReceiver records deliveries whose signature verifies.
type webhookReceiver struct {
	secret string
	mu     sync.Mutex
	got    []map[string]any
	ids    []string
	bad    int
}

func (wr *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m := hmac.New(sha256.New, []byte(wr.secret))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Hub-Signature-256"))) || r.Header.Get("X-GitHub-Event") != "workflow_job" {
		wr.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var payload map[string]any
	_ = json.Unmarshal(body, &payload)
	wr.got = append(wr.got, payload)
	wr.ids = append(wr.ids, r.Header.Get("X-GitHub-Delivery"))
	w.WriteHeader(http.StatusNoContent)
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 20*time.Second)
	wr := &webhookReceiver{secret: "It's a Secret to Everybody"}
	hook := httptest.NewServer(wr)
	t.Cleanup(hook.Close)
	s.DeliverWebhooks(hook.URL, wr.secret)

	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "gpu"}, Name: "train"})
	jit, _, err := restClient(t, s, token).Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1", "self-hosted", "gpu"))
	require.NoError(t, err)
	code, out := runInProcess(t, ctx, jit.GetEncodedJITConfig())
	require.Equal(t, 0, <-code, out.String())
	require.NoError(t, s.WaitFor(ctx, func() bool { return len(s.Deliveries()) == 3 }))

	wr.mu.Lock()
	defer wr.mu.Unlock()
	assert.Zero(t, wr.bad)
	require.Len(t, wr.got, 3)
	var actions []string
	for _, p := range wr.got {
		actions = append(actions, p["action"].(string))
		wj := p["workflow_job"].(map[string]any)
		assert.EqualValues(t, job, wj["id"])
		assert.Equal(t, []any{"self-hosted", "gpu"}, wj["labels"])
		assert.Equal(t, repo, p["repository"].(map[string]any)["full_name"])
	}
	assert.Equal(t, []string{"queued", "in_progress", "completed"}, actions)
	assert.Nil(t, wr.got[0]["workflow_job"].(map[string]any)["runner_name"], "no runner while queued")
	assert.Equal(t, "rm-1", wr.got[2]["workflow_job"].(map[string]any)["runner_name"])
	assert.Equal(t, "success", wr.got[2]["workflow_job"].(map[string]any)["conclusion"])
	assert.Len(t, uniq(wr.ids), 3, "every delivery has its own id")
	for _, d := range s.Deliveries() {
		assert.Equal(t, http.StatusNoContent, d.Status)
	}
}

func uniq(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

func TestSignTestVector(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		fakegithub.Sign("It's a Secret to Everybody", []byte("Hello, World!")))
}

func newAppKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func TestGitHubApp(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	key, keyPEM := newAppKey(t)
	const appID, installation = 42, 4242
	s.AddApp(appID, &key.PublicKey, installation)
	ctx := ctxT(t, 20*time.Second)
	base := strings.TrimSuffix(s.APIURL(), "/")

	t.Run("Installation", func(t *testing.T) {
		tr, err := ghinstallation.New(http.DefaultTransport, appID, installation, keyPEM)
		require.NoError(t, err)
		tr.BaseURL = base
		c, err := gh.NewClient(gh.WithHTTPClient(&http.Client{Transport: tr}), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
		require.NoError(t, err)
		_, resp, err := c.Actions.ListRunners(ctx, owner, name, nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, 1, s.Calls(fakegithub.RouteAccessToken))

		// The installation token works like a PAT, and can be revoked.
		tok, err := tr.Token(ctx)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(tok, "ghs_"))
		s.RevokeToken(tok)
		_, resp, err = c.Actions.ListRunners(ctx, owner, name, nil)
		require.Error(t, err)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})
	t.Run("WrongKey", func(t *testing.T) {
		_, otherPEM := newAppKey(t)
		tr, err := ghinstallation.New(http.DefaultTransport, appID, installation, otherPEM)
		require.NoError(t, err)
		tr.BaseURL = base
		_, err = tr.Token(ctx)
		var he *ghinstallation.HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusUnauthorized, he.Response.StatusCode)
	})
	t.Run("UnknownInstallation", func(t *testing.T) {
		tr, err := ghinstallation.New(http.DefaultTransport, appID, 7, keyPEM)
		require.NoError(t, err)
		tr.BaseURL = base
		_, err = tr.Token(ctx)
		var he *ghinstallation.HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusNotFound, he.Response.StatusCode)
	})
	t.Run("ScaleSetClient", func(t *testing.T) {
		c, err := scaleset.NewClientWithGitHubApp(scaleset.ClientWithGitHubAppConfig{
			GitHubConfigURL: s.URL() + "/" + repo,
			GitHubAppAuth:   scaleset.GitHubAppAuth{ClientID: fakegithub.AppClientID(appID), InstallationID: installation, PrivateKey: string(keyPEM)},
		}, scaleset.WithRetryMax(1), scaleset.WithRetryWaitMax(50*time.Millisecond))
		require.NoError(t, err)
		ss, err := c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "app-set", RunnerGroupID: 1})
		require.NoError(t, err)
		assert.Equal(t, "app-set", ss.Name)
	})
}

func TestRunnerRegistrationNeedsItsScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []fakegithub.Option
		want int
	}{
		{"default", nil, http.StatusCreated},
		{"200", []fakegithub.Option{fakegithub.WithRunnerRegistrationStatus(http.StatusOK)}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runnerRegistrationNeedsItsScope(t, newServer(t, tc.opts...), tc.want)
		})
	}
}

func runnerRegistrationNeedsItsScope(t *testing.T, s *fakegithub.Server, ok int) {
	t.Helper()
	s.AddRepo("octo-org/other")
	ctx := ctxT(t, 10*time.Second)
	tok, _, err := restClient(t, s, token).Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	post := func(configURL, auth string) int {
		body := fmt.Sprintf(`{"url": %q, "runner_event": "register"}`, configURL)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.APIURL()+"actions/runner-registration", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "RemoteAuth "+auth)
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, ok, post(s.URL()+"/"+repo, tok.GetToken()))
	assert.Equal(t, http.StatusNotFound, post(s.URL()+"/octo-org/other", tok.GetToken()))
	assert.Equal(t, http.StatusUnauthorized, post(s.URL()+"/"+repo, "not-a-token"))
}

func TestClassicLabelMatching(t *testing.T) {
	t.Parallel()
	runner := []string{"self-hosted", "Linux", "X64", "gpu"}
	for _, tc := range []struct {
		name  string
		job   []string
		match bool
	}{
		{"Subset", []string{"self-hosted", "linux", "gpu"}, true},
		{"SelfHostedIgnored", []string{"linux", "x64"}, true},
		{"OnlySelfHosted", []string{"self-hosted"}, true},
		{"ExtraLabel", []string{"self-hosted", "linux", "arm64"}, false},
		{"NoLabels", nil, false},
		{"ScaleSetName", []string{"home"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			ctx := ctxT(t, 10*time.Second)
			job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: tc.job})
			jit, _, err := restClient(t, s, token).Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1", runner...))
			require.NoError(t, err)
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			code, out := runInProcess(t, runCtx, jit.GetEncodedJITConfig())
			if tc.match {
				require.Equal(t, 0, <-code, out.String())
				j, _ := s.Job(job)
				assert.Equal(t, "completed", j.Status)
				return
			}
			// Three polls of an idle runner later, the job still waits.
			require.NoError(t, s.WaitFor(ctx, func() bool { return s.Calls(fakegithub.RouteRunnerMessages) >= 3 }))
			j, _ := s.Job(job)
			assert.Equal(t, "queued", j.Status)
			assert.Zero(t, j.RunnerID)
			stop()
			assert.Equal(t, 0, <-code)
		})
	}
}

func TestRunnerLost(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t, fakegithub.WithRunnerLostAfter(400*time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"x"}, Duration: time.Minute})
	jit, _, err := restClient(t, s, token).Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1", "self-hosted", "x"))
	require.NoError(t, err)
	p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))

	// Alive, it renews its lock (every 100 ms): six renewals later, past
	// the limit, the job still runs.
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.Calls(fakegithub.RouteRunnerJobRenew) >= 6 }))
	j, _ := s.Job(job)
	assert.Equal(t, "in_progress", j.Status, p.out.String())

	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "completed" }))
	j, _ = s.Job(job)
	assert.Equal(t, fakegithub.ResultFailed, j.Result)
	runners := s.Runners()
	require.Len(t, runners, 1, "the registration stays, offline: the reaper's business")
	assert.False(t, runners[0].Online)
	assert.False(t, runners[0].Busy)
}

func TestWaitForStopsOnClose(t *testing.T) {
	t.Parallel()
	s := fakegithub.NewServer()
	go s.Close()
	err := s.WaitFor(context.Background(), func() bool { return false })
	assert.True(t, errors.Is(err, fakegithub.ErrClosed))
}
