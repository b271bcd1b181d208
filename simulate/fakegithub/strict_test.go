package fakegithub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/golang-jwt/jwt/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// listening drives a listener as the scaleset one does: acquire what is
// offered, acknowledge, keep capacity; it returns the messages' job
// display names by kind.
type listening struct {
	t       *testing.T
	session *scaleset.MessageSessionClient
	last    int
}

func (l *listening) next(ctx context.Context, capacity int, acquire bool) (available, assigned []string, stats *scaleset.RunnerScaleSetStatistic) {
	l.t.Helper()
	msg, err := l.session.GetMessage(ctx, l.last, capacity)
	require.NoError(l.t, err)
	if msg == nil {
		return nil, nil, nil
	}
	l.last = msg.MessageID
	var ids []int64
	for _, a := range msg.JobAvailableMessages {
		available = append(available, a.JobDisplayName)
		ids = append(ids, a.RunnerRequestID)
	}
	for _, a := range msg.JobAssignedMessages {
		assigned = append(assigned, a.JobDisplayName)
	}
	if acquire && len(ids) > 0 {
		_, err := l.session.AcquireJobs(ctx, ids)
		require.NoError(l.t, err)
	}
	require.NoError(l.t, l.session.DeleteMessage(ctx, msg.MessageID))
	return available, assigned, msg.Statistics
}

func TestRestartForgetsTheActionsService(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 30*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	l := &listening{t: t, session: session}

	// Running: a scale-set job on its runner. Assigned, not started: a
	// second one nobody runs. Idle: a classic runner. Queued: a classic
	// job no runner matches.
	running := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "running", Duration: 30 * time.Second})
	waiting := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "waiting"})
	queued := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "gpu"}, Name: "queued"})
	avail, _, _ := l.next(ctx, 2, true)
	require.Equal(t, []string{"running", "waiting"}, avail)
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(waiting); return !j.ScaleSetAssignedAt.IsZero() }))
	jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rm-ss"}, ss.ID)
	require.NoError(t, err)
	ssCode, ssOut := runInProcess(t, ctx, jit.EncodedJITConfig)
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(running); return j.Status == "in_progress" }))
	j, _ := s.Job(running)
	require.Equal(t, int64(jit.Runner.ID), j.RunnerID, "the first assigned job went to the only runner")
	rest := restClient(t, s, token)
	classic, _, err := rest.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-classic"))
	require.NoError(t, err)
	clCode, clOut := runInProcess(t, ctx, classic.GetEncodedJITConfig())
	require.NoError(t, s.WaitFor(ctx, func() bool {
		for _, r := range s.Runners() {
			if r.Name == "rm-classic" && r.Online {
				return true
			}
		}
		return false
	}))
	oldReg, _, err := rest.Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	before, _ := s.Job(waiting)

	s.Restart()

	assert.Empty(t, s.ScaleSets())
	assert.Empty(t, s.Sessions())
	assert.Empty(t, s.Runners())
	j, _ = s.Job(running)
	assert.Equal(t, "completed", j.Status)
	assert.Equal(t, fakegithub.ResultFailed, j.Result, "its runner vanished mid-job")
	assert.Equal(t, 1, j.Starts)
	j, _ = s.Job(waiting)
	assert.Equal(t, "queued", j.Status)
	assert.Zero(t, j.ScaleSetID)
	assert.True(t, j.AcquiredAt.IsZero())
	assert.NotEqual(t, before.RequestID, j.RequestID, "a new runner request")
	assert.Zero(t, j.Requeues)
	j, _ = s.Job(queued)
	assert.Equal(t, "queued", j.Status)

	// Both runners hear their registration is gone and exit.
	assert.Equal(t, 0, <-ssCode, ssOut.String())
	assert.Contains(t, ssOut.String(), "canceled by the server")
	assert.Equal(t, 0, <-clCode, clOut.String())
	assert.Contains(t, clOut.String(), "registration was deleted")

	// The old admin token and registration token are gone; the PAT works.
	_, err = c.GetRunnerScaleSetByID(ctx, ss.ID)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Equal(t, http.StatusUnauthorized, registration(t, s, oldReg.GetToken()))
	_, _, err = rest.Actions.ListRunners(ctx, owner, name, nil)
	require.NoError(t, err)

	// A new chain sees no scale set; one created again is offered the job
	// that was waiting.
	c2 := scalesetClient(t, s, s.URL()+"/"+repo)
	none, err := c2.GetRunnerScaleSet(ctx, 1, "home")
	require.NoError(t, err)
	assert.Nil(t, none)
	ss2, err := c2.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "home", RunnerGroupID: 1})
	require.NoError(t, err)
	assert.NotEqual(t, ss.ID, ss2.ID)
	session2, err := c2.MessageSessionClient(ctx, ss2.ID, "host")
	require.NoError(t, err)
	l2 := &listening{t: t, session: session2}
	avail, _, _ = l2.next(ctx, 1, false)
	assert.Equal(t, []string{"waiting"}, avail)
}

// registration posts a runner-registration with token and returns the status.
func registration(t *testing.T, s *fakegithub.Server, tok string) int {
	t.Helper()
	status, _ := restPost(t, s, "actions/runner-registration", "RemoteAuth "+tok, `{"url": "`+s.URL()+"/"+repo+`", "runner_event": "register"}`)
	return status
}

func TestRevokeAndRestoreCredentials(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithPollTimeout(10*time.Second))
	key, keyPEM := newAppKey(t)
	s.AddApp(42, &key.PublicKey, 4242)
	ctx := ctxT(t, 30*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	oldAdmin := adminToken(t, s)
	rest := restClient(t, s, token)
	reg, _, err := rest.Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	appTok := installationToken(t, s, keyPEM)

	// A long poll waiting when the credentials go answers 401 at once.
	polled := make(chan error, 1)
	go func() {
		_, err := session.GetMessage(ctx, 0, 1)
		polled <- err
	}()
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.ScaleSets()[0].Polling > 0 }))
	s.RevokeCredentials()
	select {
	case err := <-polled:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "401")
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not end when the credentials were revoked")
	}

	sessions := "_apis/runtime/runnerscalesets/" + strconv.Itoa(ss.ID) + "/sessions"
	check := func(when string, want int) {
		t.Helper()
		_, resp, err := rest.Actions.ListRunners(ctx, owner, name, nil)
		require.Error(t, err, when)
		assert.Equal(t, want, resp.StatusCode, "PAT %s", when)
		status, _ := restGet(t, s, "repos/"+repo+"/actions/runners", "token "+appTok)
		assert.Equal(t, http.StatusUnauthorized, status, "installation token %s", when)
		assert.Equal(t, http.StatusUnauthorized, registration(t, s, reg.GetToken()), "registration token %s", when)
		status, _ = actionsCall(t, s, oldAdmin, http.MethodGet, "_apis/runtime/runnerscalesets/"+strconv.Itoa(ss.ID), "")
		assert.Equal(t, http.StatusUnauthorized, status, "admin token %s", when)
		status, _ = actionsCall(t, s, session.Session().MessageQueueAccessToken, http.MethodGet, sessions+"/"+session.Session().SessionID.String()+"/messages", "")
		assert.Equal(t, http.StatusUnauthorized, status, "queue token %s", when)
	}
	check("while revoked", http.StatusUnauthorized)
	status, _ := restPost(t, s, "app/installations/4242/access_tokens", "Bearer "+appJWT(t, keyPEM), "")
	assert.Equal(t, http.StatusUnauthorized, status, "app JWT while revoked")

	s.RestoreCredentials()
	_, _, err = rest.Actions.ListRunners(ctx, owner, name, nil)
	require.NoError(t, err, "the PAT works again")
	assert.NotEmpty(t, installationToken(t, s, keyPEM), "the app works again")
	status, _ = restGet(t, s, "repos/"+repo+"/actions/runners", "token "+appTok)
	assert.Equal(t, http.StatusUnauthorized, status, "an installation token from before stays invalid")
	assert.Equal(t, http.StatusUnauthorized, registration(t, s, reg.GetToken()), "a registration token from before stays invalid")
	status, _ = actionsCall(t, s, oldAdmin, http.MethodGet, "_apis/runtime/runnerscalesets/"+strconv.Itoa(ss.ID), "")
	assert.Equal(t, http.StatusUnauthorized, status, "an admin token from before stays invalid")
	_, err = session.GetMessage(ctx, 0, 1)
	require.Error(t, err, "the old session client's tokens stay invalid")

	// The chain again: registration token, admin token, then the session
	// (ours, still there: refreshed for a new queue token).
	admin := adminToken(t, s)
	status, body := actionsCall(t, s, admin, http.MethodPatch, sessions+"/"+session.Session().SessionID.String(), "{}")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"ownerName":"host"`)
	c2 := scalesetClient(t, s, s.URL()+"/"+repo)
	_, err = c2.GetRunnerScaleSetByID(ctx, ss.ID)
	require.NoError(t, err)
}

func TestJobOfferedOncePerSession(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 20*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	l := &listening{t: t, session: session}

	s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "first"})
	avail, _, stats := l.next(ctx, 5, false) // acknowledged, not acquired
	assert.Equal(t, []string{"first"}, avail)
	assert.Equal(t, 1, stats.TotalAvailableJobs)

	// The next message offers only the new job; statistics still count both.
	s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "second"})
	avail, _, stats = l.next(ctx, 5, false)
	assert.Equal(t, []string{"second"}, avail, "an acknowledged offer is not made again on the same session")
	assert.Equal(t, 2, stats.TotalAvailableJobs)
	avail, _, _ = l.next(ctx, 5, false)
	assert.Empty(t, avail, "nothing more on this session")

	// A 5xx on acquirejobs acquires nothing.
	s.Fault(fakegithub.RouteAcquireJobs, fakegithub.Fault{Status: http.StatusInternalServerError})
	var ids []int64
	for _, j := range s.Jobs() {
		ids = append(ids, j.RequestID)
	}
	_, err = session.AcquireJobs(ctx, ids)
	require.Error(t, err)
	s.ClearFaults()
	for _, j := range s.Jobs() {
		assert.True(t, j.AcquiredAt.IsZero(), "job %s acquired through a 500", j.Name)
	}
	rec := s.ScaleSets()[0]
	assert.Equal(t, 2, rec.Available)
	assert.Zero(t, rec.Assigned)

	// A new session of the scale set is offered both again.
	require.NoError(t, session.Close(ctx))
	session2, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	l2 := &listening{t: t, session: session2}
	avail, _, stats = l2.next(ctx, 5, true)
	assert.ElementsMatch(t, []string{"first", "second"}, avail)
	assert.Equal(t, 2, stats.TotalAvailableJobs)
	_, assigned, stats := l2.next(ctx, 5, false)
	assert.ElementsMatch(t, []string{"first", "second"}, assigned)
	assert.Equal(t, 2, stats.TotalAssignedJobs)
	assert.Zero(t, stats.TotalAvailableJobs)
}

func TestStopAndResumeListening(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithPollTimeout(10*time.Second))
	ctx := ctxT(t, 30*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	url := s.URL()

	polled := make(chan error, 1)
	go func() {
		_, err := session.GetMessage(ctx, 0, 1)
		polled <- err
	}()
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.ScaleSets()[0].Polling > 0 }))
	s.StopListening()
	select {
	case err := <-polled:
		require.Error(t, err, "an open long poll is dropped")
	case <-time.After(5 * time.Second):
		t.Fatal("the open long poll was not dropped")
	}
	_, err = http.Get(url + "/rate_limit")
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "connection refused: %v", err)
	s.StopListening() // twice is fine

	require.NoError(t, s.ResumeListening())
	require.NoError(t, s.ResumeListening(), "twice is fine")
	assert.Equal(t, url, s.URL())
	resp, err := http.Get(url + "/rate_limit")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := c.GetRunnerScaleSetByID(ctx, ss.ID)
	require.NoError(t, err, "state is kept")
	assert.Equal(t, "home", got.Name)
	assert.Equal(t, "host", s.ScaleSets()[0].SessionOwner)
}

func TestChargedCallsWhileLimited(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	get := func() int {
		status, _ := restGet(t, s, "repos/"+repo+"/actions/runners", "token "+token)
		return status
	}
	s.SetRateLimit(2)
	assert.Equal(t, http.StatusOK, get())
	assert.Equal(t, http.StatusOK, get())
	assert.Zero(t, s.ChargedCallsWhileLimited())
	assert.Equal(t, http.StatusForbidden, get())
	assert.Equal(t, http.StatusForbidden, get())
	status, _ := restGet(t, s, "rate_limit", "token "+token)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 2, s.ChargedCallsWhileLimited(), "two sent while exhausted; /rate_limit is free")

	s.SetRateLimit(100)
	s.SecondaryLimit(time.Minute, 1)
	assert.Equal(t, http.StatusForbidden, get(), "trips the limit: not counted")
	assert.Equal(t, 2, s.ChargedCallsWhileLimited())
	assert.Equal(t, http.StatusForbidden, get())
	assert.Equal(t, 3, s.ChargedCallsWhileLimited(), "sent before Retry-After elapsed")
	status, _ = restGet(t, s, "rate_limit", "token "+token)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 3, s.ChargedCallsWhileLimited())
}

func TestReplayWebhook(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 20*time.Second)
	wr := &webhookReceiver{secret: "It's a Secret to Everybody"}
	hook := httptest.NewServer(wr)
	t.Cleanup(hook.Close)
	s.DeliverWebhooks(hook.URL, wr.secret)
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "gpu"}})
	require.NoError(t, s.WaitFor(ctx, func() bool { return len(s.Deliveries()) == 1 }))
	first := s.Deliveries()[0]

	newID, err := s.ReplayWebhook(ctx, first.ID)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, newID)
	ds := s.Deliveries()
	require.Len(t, ds, 2)
	assert.Equal(t, newID, ds[1].ID)
	assert.Equal(t, first.ID, ds[1].ReplayOf)
	assert.Equal(t, http.StatusNoContent, ds[1].Status, "the signature is valid")
	assert.Equal(t, job, ds[1].JobID)

	wr.mu.Lock()
	assert.Zero(t, wr.bad)
	require.Len(t, wr.got, 2)
	assert.Equal(t, wr.got[0], wr.got[1], "the same body")
	assert.Equal(t, []string{first.ID, newID}, wr.ids)
	wr.mu.Unlock()

	_, err = s.ReplayWebhook(ctx, "no-such-delivery")
	require.Error(t, err)
}

// restSend sends method path (under APIURL) with an Authorization header
// and returns the status and body.
func restSend(t *testing.T, s *fakegithub.Server, method, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), method, s.APIURL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func restGet(t *testing.T, s *fakegithub.Server, path, auth string) (int, string) {
	t.Helper()
	return restSend(t, s, http.MethodGet, path, auth, "")
}

func restPost(t *testing.T, s *fakegithub.Server, path, auth, body string) (int, string) {
	t.Helper()
	return restSend(t, s, http.MethodPost, path, auth, body)
}

// appJWT signs a JWT for app 42 with keyPEM.
func appJWT(t *testing.T, keyPEM []byte) string {
	t.Helper()
	key, err := jwt.ParseRSAPrivateKeyFromPEM(keyPEM)
	require.NoError(t, err)
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: "42", IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	}).SignedString(key)
	require.NoError(t, err)
	return tok
}

// installationToken exchanges app 42's JWT for installation 4242's token.
func installationToken(t *testing.T, s *fakegithub.Server, keyPEM []byte) string {
	t.Helper()
	status, body := restPost(t, s, "app/installations/4242/access_tokens", "Bearer "+appJWT(t, keyPEM), "")
	require.Equal(t, http.StatusCreated, status, body)
	var out struct{ Token string }
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	return out.Token
}
