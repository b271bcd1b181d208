package fakegithub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actions/scaleset"
	gh "github.com/google/go-github/v88/github"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestScaleSets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.AddOrg("acme")
	group := s.AddRunnerGroup(rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}, "builders")
	ctx := ctxT(t, 20*time.Second)
	c := scalesetClient(t, s, s.URL()+"/acme")

	g, err := c.GetRunnerGroupByName(ctx, "builders")
	require.NoError(t, err)
	assert.EqualValues(t, group, g.ID)
	g, err = c.GetRunnerGroupByName(ctx, "default")
	require.NoError(t, err)
	assert.Equal(t, 1, g.ID)
	assert.True(t, g.IsDefault)
	_, err = c.GetRunnerGroupByName(ctx, "nope")
	require.Error(t, err)

	missing, err := c.GetRunnerScaleSet(ctx, int(group), "linux")
	require.NoError(t, err)
	assert.Nil(t, missing)

	created, err := c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
		Name: "linux", RunnerGroupID: int(group), RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
	})
	require.NoError(t, err)
	assert.NotZero(t, created.ID)
	assert.Equal(t, "builders", created.RunnerGroupName)
	assert.Equal(t, []scaleset.Label{{Type: "System", Name: "linux"}}, created.Labels)
	assert.True(t, created.RunnerSetting.DisableUpdate)
	require.NotNil(t, created.Statistics)

	_, err = c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "linux", RunnerGroupID: int(group)})
	require.Error(t, err, "names are unique in a group")

	byName, err := c.GetRunnerScaleSet(ctx, int(group), "linux")
	require.NoError(t, err)
	assert.Equal(t, created.ID, byName.ID)
	byID, err := c.GetRunnerScaleSetByID(ctx, created.ID)
	require.NoError(t, err)
	assert.Equal(t, "linux", byID.Name)

	updated, err := c.UpdateRunnerScaleSet(ctx, created.ID, &scaleset.RunnerScaleSet{
		Labels: []scaleset.Label{{Name: "linux"}, {Name: "big"}}, RunnerSetting: scaleset.RunnerSetting{DisableUpdate: false},
	})
	require.NoError(t, err)
	assert.Len(t, updated.Labels, 2)
	assert.False(t, updated.RunnerSetting.DisableUpdate)
	assert.Equal(t, int(group), updated.RunnerGroupID)

	// Another scope does not see it.
	other := scalesetClient(t, s, s.URL()+"/"+repo)
	none, err := other.GetRunnerScaleSet(ctx, int(group), "linux")
	require.NoError(t, err)
	assert.Nil(t, none)
	_, err = other.GetRunnerScaleSetByID(ctx, created.ID)
	require.Error(t, err)

	require.NoError(t, c.DeleteRunnerScaleSet(ctx, created.ID))
	_, err = c.GetRunnerScaleSetByID(ctx, created.ID)
	require.Error(t, err)
	assert.Empty(t, s.ScaleSets())
}

// newScaleSet creates scale set "home" in the test repository.
func newScaleSet(t *testing.T, s *fakegithub.Server) (*scaleset.Client, *scaleset.RunnerScaleSet) {
	t.Helper()
	c := scalesetClient(t, s, s.URL()+"/"+repo)
	ss, err := c.CreateRunnerScaleSet(ctxT(t, 10*time.Second), &scaleset.RunnerScaleSet{Name: "home", RunnerGroupID: 1})
	require.NoError(t, err)
	return c, ss
}

func TestMessageSession(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithPollTimeout(200*time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	c, ss := newScaleSet(t, s)

	session, err := c.MessageSessionClient(ctx, ss.ID, "host-a")
	require.NoError(t, err)
	assert.Equal(t, "host-a", session.Session().OwnerName)
	require.NotNil(t, session.Session().Statistics)

	t.Run("Conflict", func(t *testing.T) {
		_, err := c.MessageSessionClient(ctx, ss.ID, "host-b")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "409")
		assert.Contains(t, err.Error(), "host-a")
	})

	t.Run("LongPoll", func(t *testing.T) {
		start := time.Now()
		msg, err := session.GetMessage(ctx, 0, 0)
		require.NoError(t, err)
		assert.Nil(t, msg, "202: nothing yet")
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "the poll waits its timeout")

		// A job arriving during a poll answers it at once.
		go func() {
			if s.WaitFor(ctx, func() bool { return s.ScaleSets()[0].Polling > 0 }) == nil {
				s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "build"})
			}
		}()
		msg, err = session.GetMessage(ctx, 0, 0)
		require.NoError(t, err)
		require.NotNil(t, msg)
		require.Len(t, msg.JobAvailableMessages, 1)
		avail := msg.JobAvailableMessages[0]
		assert.Equal(t, "build", avail.JobDisplayName)
		assert.Equal(t, []string{"home"}, avail.RequestLabels)
		assert.Equal(t, "app", avail.RepositoryName)
		assert.Equal(t, "octo-org", avail.OwnerName)
		assert.Contains(t, avail.AcquireJobURL, "/acquirejobs")
		assert.Equal(t, 1, msg.Statistics.TotalAvailableJobs)
		assert.Equal(t, 0, msg.Statistics.TotalAssignedJobs)

		// Not acknowledged, it comes again.
		again, err := session.GetMessage(ctx, 0, 0)
		require.NoError(t, err)
		require.NotNil(t, again)
		assert.Equal(t, msg.MessageID, again.MessageID)
		require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))

		acquired, err := session.AcquireJobs(ctx, []int64{avail.RunnerRequestID, 999999})
		require.NoError(t, err)
		assert.Equal(t, []int64{avail.RunnerRequestID}, acquired)

		// With capacity 0 the service assigns nothing.
		msg, err = session.GetMessage(ctx, msg.MessageID, 0)
		require.NoError(t, err)
		assert.Nil(t, msg)
		jobs := s.Jobs()
		require.Len(t, jobs, 1)
		assert.False(t, jobs[0].AcquiredAt.IsZero())
		assert.True(t, jobs[0].ScaleSetAssignedAt.IsZero())
		assert.Equal(t, ss.ID, jobs[0].ScaleSetID)

		// Capacity 1: assigned.
		msg, err = session.GetMessage(ctx, 0, 1)
		require.NoError(t, err)
		require.NotNil(t, msg)
		require.Len(t, msg.JobAssignedMessages, 1)
		assert.Equal(t, 1, msg.Statistics.TotalAssignedJobs)
		require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))
	})

	t.Run("Close", func(t *testing.T) {
		require.NoError(t, session.Close(ctx))
		again, err := c.MessageSessionClient(ctx, ss.ID, "host-b")
		require.NoError(t, err)
		assert.Equal(t, 1, again.Session().Statistics.TotalAssignedJobs, "assignments belong to the scale set, not the session")
		require.NoError(t, again.Close(ctx))
	})
}

func TestSessionLapses(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithSessionIdleTimeout(300*time.Millisecond)) // opted in
	ctx := ctxT(t, 10*time.Second)
	c, ss := newScaleSet(t, s)
	_, err := c.MessageSessionClient(ctx, ss.ID, "killed-manager")
	require.NoError(t, err)
	_, err = c.MessageSessionClient(ctx, ss.ID, "new-manager")
	require.Error(t, err)
	require.NoError(t, s.WaitFor(ctx, func() bool { return s.ScaleSets()[0].SessionOwner == "" }))
	session, err := c.MessageSessionClient(ctx, ss.ID, "new-manager")
	require.NoError(t, err)
	assert.Equal(t, "new-manager", session.Session().OwnerName)
}

func TestQueueTokenExpires(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithQueueTokenLifetime(200*time.Millisecond), fakegithub.WithPollTimeout(50*time.Millisecond))
	ctx := ctxT(t, 10*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	first := session.Session().MessageQueueAccessToken
	require.NoError(t, s.WaitFor(ctx, func() bool {
		_, err := session.GetMessage(ctx, 0, 1)
		require.NoError(t, err, "the client refreshes the session on 401 and polls again")
		return s.Calls(fakegithub.RouteRefreshSession) > 0
	}))
	assert.NotEqual(t, first, session.Session().MessageQueueAccessToken)
	var unauthorized int
	for _, call := range s.CallLog() {
		if call.Route == fakegithub.RouteMessages && call.Status == http.StatusUnauthorized {
			unauthorized++
		}
	}
	assert.Equal(t, 1, unauthorized)
}

func TestScaleSetRunners(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 20*time.Second)
	c, ss := newScaleSet(t, s)

	jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rm-1"}, ss.ID)
	require.NoError(t, err)
	assert.Equal(t, "rm-1", jit.Runner.Name)
	assert.Equal(t, ss.ID, jit.Runner.RunnerScaleSetID)
	assert.NotEmpty(t, jit.EncodedJITConfig)

	_, err = c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rm-1"}, ss.ID)
	require.ErrorIs(t, err, scaleset.RunnerExistsError)

	got, err := c.GetRunner(ctx, jit.Runner.ID)
	require.NoError(t, err)
	assert.Equal(t, "rm-1", got.Name)
	byName, err := c.GetRunnerByName(ctx, "rm-1")
	require.NoError(t, err)
	assert.Equal(t, jit.Runner.ID, byName.ID)
	none, err := c.GetRunnerByName(ctx, "rm-9")
	require.NoError(t, err)
	assert.Nil(t, none)

	// As on GitHub, the REST API does not know scale-set runners: only the
	// Actions service does.
	rest := restClient(t, s, token)
	classic, _, err := rest.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("classic-1"))
	require.NoError(t, err)
	runners, _, err := rest.Actions.ListRunners(ctx, owner, name, nil)
	require.NoError(t, err)
	require.Equal(t, 1, runners.TotalCount, "the classic runner only")
	assert.Equal(t, "classic-1", runners.Runners[0].GetName())
	runners, _, err = rest.Actions.ListRunners(ctx, owner, name, &gh.ListRunnersOptions{Name: gh.Ptr("rm-1")})
	require.NoError(t, err)
	assert.Zero(t, runners.TotalCount)
	assert.Empty(t, runners.Runners)
	_, resp, err := rest.Actions.GetRunner(ctx, owner, name, int64(jit.Runner.ID))
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = rest.Actions.RemoveRunner(ctx, owner, name, int64(jit.Runner.ID))
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	got, err = c.GetRunner(ctx, jit.Runner.ID)
	require.NoError(t, err, "the REST delete did not remove it")
	assert.Equal(t, "rm-1", got.Name)
	_, _, err = rest.Actions.GetRunner(ctx, owner, name, classic.GetRunner().GetID())
	require.NoError(t, err)

	t.Run("Busy", func(t *testing.T) {
		session, err := c.MessageSessionClient(ctx, ss.ID, "host")
		require.NoError(t, err)
		job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Duration: 30 * time.Second})
		msg, err := session.GetMessage(ctx, 0, 1)
		require.NoError(t, err)
		require.NotNil(t, msg)
		_, err = session.AcquireJobs(ctx, []int64{msg.JobAvailableMessages[0].RunnerRequestID})
		require.NoError(t, err)
		require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))
		_, err = session.GetMessage(ctx, msg.MessageID, 1) // assigns within capacity 1
		require.NoError(t, err)

		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		code, out := runInProcess(t, runCtx, jit.EncodedJITConfig)
		require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))
		err = c.RemoveRunner(ctx, int64(jit.Runner.ID))
		require.ErrorIs(t, err, scaleset.JobStillRunningError)
		stop()
		assert.Equal(t, 0, <-code, out.String())
	})
	t.Run("Remove", func(t *testing.T) {
		jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rm-2"}, ss.ID)
		require.NoError(t, err)
		require.NoError(t, c.RemoveRunner(ctx, int64(jit.Runner.ID)))
		err = c.RemoveRunner(ctx, int64(jit.Runner.ID))
		require.ErrorIs(t, err, scaleset.RunnerNotFoundError)
	})
}

func TestAssignedJobNotTakenIsRequeued(t *testing.T) {
	t.Parallel()
	s := newServer(t, fakegithub.WithAssignTimeout(100*time.Millisecond), fakegithub.WithPollTimeout(50*time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	c, ss := newScaleSet(t, s)
	session, err := c.MessageSessionClient(ctx, ss.ID, "host")
	require.NoError(t, err)
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}})

	// A listener that acquires every job and never starts a runner.
	var canceled []string
	last := 0
	require.NoError(t, s.WaitFor(ctx, func() bool {
		msg, err := session.GetMessage(ctx, last, 5)
		require.NoError(t, err)
		if msg != nil {
			last = msg.MessageID
			require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))
			var ids []int64
			for _, a := range msg.JobAvailableMessages {
				ids = append(ids, a.RunnerRequestID)
			}
			if len(ids) > 0 {
				_, err := session.AcquireJobs(ctx, ids)
				require.NoError(t, err)
			}
			for _, done := range msg.JobCompletedMessages {
				rec, _ := s.Job(job)
				assert.Equal(t, rec.ScaleSetJobID, done.JobID, "the same jobId on each requeue")
				canceled = append(canceled, done.Result)
			}
		}
		j, _ := s.Job(job)
		return j.Status == "completed" && len(canceled) >= 4 // the last JobCompleted may come a poll later
	}))
	j, _ := s.Job(job)
	assert.Equal(t, fakegithub.ResultCanceled, j.Result)
	assert.Equal(t, 3, j.Requeues)
	assert.Equal(t, 0, j.Starts)
	assert.Equal(t, []string{"canceled", "canceled", "canceled", "canceled"}, canceled, "each requeue, then the last")
}

// adminToken runs the chain a scale-set client runs (registration token,
// then runner-registration) and returns the Actions service token for the
// test repository.
func adminToken(t *testing.T, s *fakegithub.Server) string {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	reg, _, err := restClient(t, s, token).Actions.CreateRegistrationToken(ctx, owner, name)
	require.NoError(t, err)
	body := fmt.Sprintf(`{"url": %q, "runner_event": "register"}`, s.URL()+"/"+repo)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.APIURL()+"actions/runner-registration", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "RemoteAuth "+reg.GetToken())
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "GitHub's test servers answer 201")
	var out struct{ Token string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Token
}

// actionsCall sends method path (under ActionsURL) with an Actions service
// token and returns the status and body.
func actionsCall(t *testing.T, s *fakegithub.Server, tok, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), method, s.ActionsURL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestSessionStaysUntilDeleted(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := ctxT(t, 10*time.Second)
	c, ss := newScaleSet(t, s)
	dead, err := c.MessageSessionClient(ctx, ss.ID, "killed-manager")
	require.NoError(t, err)
	id := dead.Session().SessionID.String()

	// Its owner died without deleting it; a day later it is still there.
	s.Advance(24 * time.Hour)
	assert.Equal(t, "killed-manager", s.ScaleSets()[0].SessionOwner)
	require.Len(t, s.Sessions(), 1)
	assert.Equal(t, fakegithub.SessionRecord{ScaleSetID: ss.ID, SessionID: id, Owner: "killed-manager", LastActive: s.Sessions()[0].LastActive}, s.Sessions()[0])
	tok := adminToken(t, s)
	sessions := "_apis/runtime/runnerscalesets/" + strconv.Itoa(ss.ID) + "/sessions"
	status, body := actionsCall(t, s, tok, http.MethodPost, sessions, `{"ownerName": "new-manager"}`)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "SessionConflictException")
	assert.Contains(t, body, "already has an active session for owner killed-manager")

	// Only a delete by its id removes it.
	status, _ = actionsCall(t, s, tok, http.MethodDelete, sessions+"/not-"+id, "")
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = actionsCall(t, s, tok, http.MethodDelete, sessions+"/"+id, "")
	assert.Equal(t, http.StatusNoContent, status)
	assert.Empty(t, s.ScaleSets()[0].SessionOwner)
	assert.Empty(t, s.Sessions())
	// A day later the first client's admin token expired: a new client.
	c = scalesetClient(t, s, s.URL()+"/"+repo)
	session, err := c.MessageSessionClient(ctx, ss.ID, "new-manager")
	require.NoError(t, err)
	assert.Equal(t, "new-manager", session.Session().OwnerName)
}

// A scale-set job message's jobId is a string in the form the fake was
// given: a UUID by default (as on github.com), the REST number in decimal,
// or none (an older server: runnerRequestId alone). The REST route gives
// the REST number whatever the form.
func TestScaleSetJobIDForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		opts  []fakegithub.Option
		check func(t *testing.T, rec fakegithub.JobRecord, got string)
	}{
		{"UUID", nil, func(t *testing.T, rec fakegithub.JobRecord, got string) {
			_, err := uuid.Parse(got)
			assert.NoError(t, err, "a UUID: %q", got)
			assert.Equal(t, rec.ScaleSetJobID, got)
		}},
		{"Numeric", []fakegithub.Option{fakegithub.WithScaleSetJobIDs(fakegithub.JobIDNumeric)}, func(t *testing.T, rec fakegithub.JobRecord, got string) {
			assert.Equal(t, strconv.FormatInt(rec.ID, 10), got)
			assert.Equal(t, rec.ScaleSetJobID, got)
		}},
		{"None", []fakegithub.Option{fakegithub.WithScaleSetJobIDs(fakegithub.JobIDNone)}, func(t *testing.T, rec fakegithub.JobRecord, got string) {
			assert.Empty(t, got)
			assert.Empty(t, rec.ScaleSetJobID)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, append(tt.opts, fakegithub.WithPollTimeout(50*time.Millisecond))...)
			ctx := ctxT(t, 20*time.Second)
			c, ss := newScaleSet(t, s)
			session, err := c.MessageSessionClient(ctx, ss.ID, "host")
			require.NoError(t, err)
			job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}})
			var avail *scaleset.JobAvailable
			last := 0
			require.NoError(t, s.WaitFor(ctx, func() bool {
				msg, err := session.GetMessage(ctx, last, 5)
				require.NoError(t, err)
				if msg == nil {
					return false
				}
				last = msg.MessageID
				require.NoError(t, session.DeleteMessage(ctx, msg.MessageID))
				if len(msg.JobAvailableMessages) > 0 {
					avail = msg.JobAvailableMessages[0]
				}
				return avail != nil
			}))
			rec, ok := s.Job(job)
			require.True(t, ok)
			assert.Equal(t, rec.RequestID, avail.RunnerRequestID)
			tt.check(t, rec, avail.JobID)
		})
	}
}
