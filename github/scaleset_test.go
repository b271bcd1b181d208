package github_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const setName = "home-lab"

func newScaleSet(t *testing.T, env *fakeEnv, target rm.ScaleTarget, opts github.ScaleSetOptions) *github.ScaleSetTarget {
	t.Helper()
	if opts.Owner == "" {
		opts.Owner = "host-a"
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = prefix
	}
	opts.DisableUpdate = true
	st, err := github.NewScaleSetTarget(t.Context(), env.client, target, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

func (e *fakeEnv) scaleSet(name string) (fakegithub.ScaleSetRecord, bool) {
	for _, s := range e.fake.ScaleSets() {
		if s.Name == name {
			return s, true
		}
	}
	return fakegithub.ScaleSetRecord{}, false
}

func TestScaleSetRegistrar(t *testing.T) {
	for _, kind := range authKinds {
		t.Run(kind, func(t *testing.T) {
			env := newFakeEnv(t, kind)
			st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
			ctx := t.Context()

			rec, ok := env.scaleSet(setName)
			require.True(t, ok, "the scale set was created")
			assert.Equal(t, st.ScaleSetID(), rec.ID)
			assert.True(t, rec.DisableUpdate)
			assert.EqualValues(t, 1, rec.GroupID)

			// A second manager finds it instead of creating another.
			again := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
			assert.Equal(t, st.ScaleSetID(), again.ScaleSetID())
			assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteCreateScaleSet))

			jit, err := st.JITConfig(ctx, prefix+"s1")
			require.NoError(t, err)
			assert.NotZero(t, jit.RunnerID)
			assert.Equal(t, prefix+"s1", jit.RunnerName)
			_, err = base64.StdEncoding.DecodeString(jit.Encoded)
			require.NoError(t, err)
			reg, ok := env.runner(prefix + "s1")
			require.True(t, ok)
			assert.Equal(t, st.ScaleSetID(), reg.ScaleSetID)

			// The same name again: removed (ours) and registered anew.
			jit2, err := st.JITConfig(ctx, prefix+"s1")
			require.NoError(t, err)
			assert.NotEqual(t, jit.RunnerID, jit2.RunnerID)
			assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteAgent))

			s2, err := st.JITConfig(ctx, prefix+"s2")
			require.NoError(t, err)
			_, err = st.Runners(ctx, prefix)
			require.ErrorIs(t, err, rm.ErrCannotList, "scale-set runners are not in the REST list")
			r, found, err := st.LookupRunner(ctx, s2.RunnerID, "")
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, prefix+"s2", r.Name)

			require.NoError(t, st.RemoveRunner(ctx, jit2.RunnerID))
			_, ok = env.runner(prefix + "s1")
			assert.False(t, ok)
			require.NoError(t, st.RemoveRunner(ctx, jit2.RunnerID), "already removed is not an error")
		})
	}
}

func TestScaleSetUpdatesSettings(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	target := scaleSetTarget(t, repoScope(t), "", setName)
	st, err := github.NewScaleSetTarget(t.Context(), env.client, target, github.ScaleSetOptions{Owner: "a"})
	require.NoError(t, err)
	rec, _ := env.scaleSet(setName)
	assert.False(t, rec.DisableUpdate)
	require.NoError(t, st.Close(t.Context()))

	st2 := newScaleSet(t, env, target, github.ScaleSetOptions{}) // DisableUpdate
	rec, _ = env.scaleSet(setName)
	assert.True(t, rec.DisableUpdate, "the setting was updated")
	assert.Equal(t, st.ScaleSetID(), st2.ScaleSetID())
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteUpdateScaleSet))
}

func TestScaleSetRunnerGroup(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	gid := env.fake.AddRunnerGroup(org, "builders")
	st := newScaleSet(t, env, scaleSetTarget(t, org, "builders", setName), github.ScaleSetOptions{})
	rec, ok := env.scaleSet(setName)
	require.True(t, ok)
	assert.Equal(t, gid, rec.GroupID)
	assert.Equal(t, st.ScaleSetID(), rec.ID)

	_, err = github.NewScaleSetTarget(t.Context(), env.client, scaleSetTarget(t, org, "nope", setName), github.ScaleSetOptions{})
	require.ErrorIs(t, err, rm.ErrNotFound)
}

func TestScaleSetErrors(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	missing, err := rm.Repository("octo-org/missing")
	require.NoError(t, err)
	_, err = github.NewScaleSetTarget(t.Context(), env.client, scaleSetTarget(t, missing, "", setName), github.ScaleSetOptions{})
	require.ErrorIs(t, err, rm.ErrNotFound)
	env.noSecret(t, err)

	env.fake.RevokeToken(fakeToken)
	_, err = github.NewScaleSetTarget(t.Context(), env.client, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	require.ErrorIs(t, err, rm.ErrUnauthorized)
	env.noSecret(t, err)
}

func TestScaleSetRunnerBusy(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	jit, err := st.JITConfig(t.Context(), prefix+"b")
	require.NoError(t, err)
	env.fake.Fault(fakegithub.RouteDeleteAgent, fakegithub.Fault{Status: http.StatusBadRequest, Times: 1,
		Body: `{"typeName":"GitHub.DistributedTask.WebApi.JobStillRunningException","message":"Agent is still running a job."}`})
	require.ErrorIs(t, st.RemoveRunner(t.Context(), jit.RunnerID), rm.ErrRunnerBusy)
}

func TestScaleSetWatch(t *testing.T) {
	for _, kind := range authKinds {
		t.Run(kind, func(t *testing.T) {
			env := newFakeEnv(t, kind)
			st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
			for range 3 {
				env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
			}
			env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"other-set"}})
			log, _ := watch(t, st, fixed(10))
			require.Eventually(t, log.wanted(3), 5*time.Second, 10*time.Millisecond)
			rec, _ := env.scaleSet(setName)
			assert.Equal(t, "host-a", rec.SessionOwner)
			assert.Equal(t, 10, rec.MaxCapacity, "the capacity is sent with the poll")
			assert.Equal(t, 0, env.fake.Calls(fakegithub.RouteRepoRuns), "scale-set mode never polls REST for demand")
		})
	}
}

func TestScaleSetLiveCapacity(t *testing.T) {
	// Long polls that hold 30 s: a capacity change must not wait for one.
	env := newFakeEnv(t, "PAT", fakegithub.WithPollTimeout(30*time.Second))
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{CapacityCheck: 20 * time.Millisecond})
	var capacity atomic.Int64
	capacity.Store(1)
	for range 3 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	}
	log, _ := watch(t, st, func() int { return int(capacity.Load()) })
	require.Eventually(t, func() bool { r, _ := env.scaleSet(setName); return r.MaxCapacity == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "assignments are held to the capacity")

	start := time.Now()
	capacity.Store(3)
	require.Eventually(t, func() bool { r, _ := env.scaleSet(setName); return r.MaxCapacity == 3 }, 5*time.Second, 10*time.Millisecond)
	assert.Less(t, time.Since(start), 2*time.Second, "the new capacity reached GitHub without waiting for the long poll")
	require.Eventually(t, log.wanted(3), 5*time.Second, 10*time.Millisecond)
}

func TestScaleSetSessionConflict(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	target := scaleSetTarget(t, repoScope(t), "", setName)
	a := newScaleSet(t, env, target, github.ScaleSetOptions{Owner: "host-a"})
	logA, _ := watch(t, a, fixed(2))
	require.Eventually(t, func() bool { return logA.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	b := newScaleSet(t, env, target, github.ScaleSetOptions{Owner: "host-b", SessionConflictRetries: 3})
	_, done := watch(t, b, fixed(2))
	select {
	case err := <-done:
		require.ErrorIs(t, err, rm.ErrSessionConflict)
		assert.Contains(t, err.Error(), "owner host-a")
		assert.Contains(t, err.Error(), setName)
		assert.Contains(t, err.Error(), "stop it or wait")
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not give up on a held session")
	}
	assert.Equal(t, 5, env.fake.Calls(fakegithub.RouteCreateSession), "host-a's, then host-b's try and three retries")
	assert.Len(t, env.sleeps.all(), 3, "each retry waits")
}

func TestScaleSetSessionRefresh(t *testing.T) {
	env := newFakeEnv(t, "PAT", fakegithub.WithQueueTokenLifetime(300*time.Millisecond))
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	log, _ := watch(t, st, fixed(5))
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteRefreshSession) >= 2 }, 5*time.Second, 20*time.Millisecond)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "polling goes on with the refreshed token")
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteCreateSession), "a refresh, not a new session")
}

func TestScaleSetClose(t *testing.T) {
	tests := []struct {
		name          string
		deleteOnClose bool
	}{{"KeepsScaleSet", false}, {"DeletesScaleSet", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newFakeEnv(t, "PAT")
			st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{DeleteOnClose: tt.deleteOnClose})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- st.Watch(ctx, fixed(1), func(rm.Demand) {}) }()
			// Polling: the target holds its session (a session GitHub made
			// but whose answer a cancel cut off is not the target's to end).
			require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteMessages) > 0 }, 5*time.Second, 10*time.Millisecond)
			cancel()
			require.NoError(t, <-done)
			require.NoError(t, st.Close(t.Context()))
			assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteSession))
			rec, ok := env.scaleSet(setName)
			if tt.deleteOnClose {
				assert.False(t, ok, "the scale set is gone")
			} else {
				require.True(t, ok)
				assert.Empty(t, rec.SessionOwner, "the session is gone")
			}
			// Another manager can take over at once.
			other := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{Owner: "host-b"})
			log, _ := watch(t, other, fixed(1))
			require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

func TestScaleSetSurvivesFaults(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	env.fake.Fault(fakegithub.RouteMessages, fakegithub.Fault{Status: http.StatusServiceUnavailable, Times: 6})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	env.fake.Fault(fakegithub.RouteMessages, fakegithub.Fault{Drop: true, Times: 3})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(2), 5*time.Second, 10*time.Millisecond)
}

func TestScaleSetLostSessionReopened(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	env.fake.Fault(fakegithub.RouteMessages, fakegithub.Fault{Status: http.StatusNotFound, Times: 1,
		Body: `{"typeName":"GitHub.Actions.Runtime.MessageSessionNotFoundException","message":"The message session was not found."}`})
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteCreateSession) == 2 }, 5*time.Second, 10*time.Millisecond)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "demand flows through the new session")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	rec, _ := env.scaleSet(setName)
	assert.Equal(t, "host-a", rec.SessionOwner)
}

func TestScaleSetRegistrations(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ctx := t.Context()
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	jit, err := st.JITConfig(ctx, prefix+"left")
	require.NoError(t, err)
	sets := env.fake.Calls(fakegithub.RouteScaleSets) + env.fake.Calls(fakegithub.RouteCreateScaleSet) + env.fake.Calls(fakegithub.RouteUpdateScaleSet)

	// A scale set that does not exist is neither looked up nor created:
	// runners are the scope's at the Actions service.
	for _, name := range []string{setName, "never-made"} {
		t.Run(name, func(t *testing.T) {
			reg, err := github.NewScaleSetRegistrations(env.client, scaleSetTarget(t, repoScope(t), "", name), github.ScaleSetOptions{})
			require.NoError(t, err)
			r, found, err := reg.LookupRunner(ctx, 0, prefix+"left")
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, rm.Runner{ID: jit.RunnerID, Name: prefix + "left"}, r)
			_, found, err = reg.LookupRunner(ctx, 0, prefix+"never-registered")
			require.NoError(t, err)
			assert.False(t, found)
		})
	}
	reg, err := github.NewScaleSetRegistrations(env.client, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	require.NoError(t, err)
	require.NoError(t, reg.RemoveRunner(ctx, jit.RunnerID))
	_, found, err := reg.LookupRunner(ctx, jit.RunnerID, "")
	require.NoError(t, err)
	assert.False(t, found, "removed")
	require.NoError(t, reg.RemoveRunner(ctx, jit.RunnerID), "a registration already gone is no error")
	assert.Equal(t, sets, env.fake.Calls(fakegithub.RouteScaleSets)+env.fake.Calls(fakegithub.RouteCreateScaleSet)+env.fake.Calls(fakegithub.RouteUpdateScaleSet),
		"no scale set was looked up, created or updated")
	assert.Len(t, env.fake.ScaleSets(), 1)

	_, err = github.NewScaleSetRegistrations(env.client, rm.ScaleTarget{Scope: repoScope(t), Labels: []string{"self-hosted", "linux"}}, github.ScaleSetOptions{})
	require.ErrorIs(t, err, rm.ErrInvalid)
}
