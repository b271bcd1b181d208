package github_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memJournal is a SessionJournal in memory (the SQLite one passes the
// store's conformance suite); it counts what it was asked.
type memJournal struct {
	mu      sync.Mutex
	m       map[int]rm.SessionRecord
	forgets int
}

func newMemJournal() *memJournal { return &memJournal{m: map[int]rm.SessionRecord{}} }

func (j *memJournal) SessionOf(_ context.Context, id int) (rm.SessionRecord, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.m[id]
	return r, ok, nil
}

func (j *memJournal) RecordSession(_ context.Context, r rm.SessionRecord) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[r.ScaleSetID] = r
	return nil
}

func (j *memJournal) ForgetSession(_ context.Context, id int, session string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r, ok := j.m[id]; ok && r.SessionID == session {
		delete(j.m, id)
		j.forgets++
	}
	return nil
}

func (j *memJournal) only(t *testing.T) rm.SessionRecord {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	require.Len(t, j.m, 1)
	for _, r := range j.m {
		return r
	}
	return rm.SessionRecord{}
}

// sessionOf is the fake's session of the scale set: its owner, "" if none.
func (e *fakeEnv) sessionOwner(name string) string {
	r, _ := e.scaleSet(name)
	return r.SessionOwner
}

// crash stops a watch as kill -9 would: no Close, no session deleted.
func crash(t *testing.T, src watcher, capacity func() int) (*demandLog, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &demandLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = src.Watch(ctx, capacity, log.report)
	}()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return log, stop
}

func TestScaleSetRestartAfterKill(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	journal := newMemJournal()
	target := scaleSetTarget(t, repoScope(t), "", setName)
	opts := github.ScaleSetOptions{Owner: "host-a/1234", HostID: "h-1", Journal: journal}

	// The first manager opens its session and is killed.
	first, err := github.NewScaleSetTarget(t.Context(), env.client, target, withPrefix(opts))
	require.NoError(t, err)
	log1, kill := crash(t, first, fixed(2))
	require.Eventually(t, func() bool { return log1.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	rec := journal.only(t)
	assert.Equal(t, first.ScaleSetID(), rec.ScaleSetID)
	assert.Equal(t, "host-a/1234", rec.Owner)
	assert.Equal(t, "h-1", rec.HostID)
	assert.Equal(t, "repo:"+fakeRepo, rec.Scope)
	assert.NotEmpty(t, rec.SessionID)
	kill()
	require.Equal(t, "host-a/1234", env.sessionOwner(setName), "a killed manager's session stays at GitHub")

	// The restarted manager deletes its own stale session and serves at once.
	start := time.Now()
	second := newScaleSet(t, env, target, opts)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	log2, done := watch(t, second, fixed(2))
	require.Eventually(t, log2.wanted(1), 5*time.Second, 10*time.Millisecond, "the restarted manager serves")
	t.Logf("serving again %v after the restart", time.Since(start))
	assert.Less(t, time.Since(start), 5*time.Second)
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteSession), "the stale session was deleted by id")
	assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteCreateSession), "and a new one opened at once, without a conflict")
	now := journal.only(t)
	assert.NotEqual(t, rec.SessionID, now.SessionID, "the new session is recorded")

	// A clean close forgets it.
	require.NoError(t, second.Close(t.Context()))
	journal.mu.Lock()
	assert.Empty(t, journal.m)
	journal.mu.Unlock()
}

func withPrefix(o github.ScaleSetOptions) github.ScaleSetOptions {
	o.NamePrefix, o.DisableUpdate = prefix, true
	return o
}

func TestScaleSetNeverDeletesAnotherOwnersSession(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	journal := newMemJournal() // shared, as a fleet journal would be
	target := scaleSetTarget(t, repoScope(t), "", setName)
	a := newScaleSet(t, env, target, github.ScaleSetOptions{Owner: "host-a", Journal: journal})
	logA, _ := watch(t, a, fixed(2))
	require.Eventually(t, func() bool { return logA.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	b := newScaleSet(t, env, target, github.ScaleSetOptions{Owner: "host-b", Journal: journal, SessionConflictRetries: 2})
	_, done := watch(t, b, fixed(2))
	select {
	case err := <-done:
		require.ErrorIs(t, err, rm.ErrSessionConflict)
		assert.Contains(t, err.Error(), "owner host-a", "the error names who holds the session")
		reason, since := b.Waiting()
		require.ErrorIs(t, reason, rm.ErrSessionConflict)
		assert.False(t, since.IsZero())
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not give up on a session another owner holds")
	}
	assert.Equal(t, 0, env.fake.Calls(fakegithub.RouteDeleteSession), "another owner's session is never deleted")
	assert.Equal(t, "host-a", env.sessionOwner(setName))
	assert.Equal(t, "host-a", journal.only(t).Owner)
}

func TestScaleSetConflictWithOwnStaleSession(t *testing.T) {
	// The journal learns of the stale session only after the first open
	// (another process of this host recorded it): the 409 names this
	// owner, and the session is deleted by id then.
	env := newFakeEnv(t, "PAT")
	journal := newMemJournal()
	target := scaleSetTarget(t, repoScope(t), "", setName)
	opts := github.ScaleSetOptions{Owner: "host-a", Journal: journal}
	second := newScaleSet(t, env, target, opts)

	first, err := github.NewScaleSetTarget(t.Context(), env.client, target, withPrefix(opts))
	require.NoError(t, err)
	log1, kill := crash(t, first, fixed(2))
	require.Eventually(t, func() bool { return log1.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	kill()

	log2, _ := watch(t, second, fixed(2))
	require.Eventually(t, func() bool { return log2.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteSession))
	assert.Empty(t, env.sleeps.all(), "no wait: the own session is deleted at once")
}

func TestScaleSetRecoversFromUnauthorized(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{Journal: newMemJournal()})
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	exchanges := env.fake.Calls(fakegithub.RouteRunnerRegistration)

	// The queue token is refused, and so is its refresh: the session and
	// the admin token are no good.
	env.fake.Fault(fakegithub.RouteMessages, fakegithub.Fault{Status: http.StatusUnauthorized, Times: 1})
	env.fake.Fault(fakegithub.RouteRefreshSession, fakegithub.Fault{Status: http.StatusUnauthorized, Times: 1})
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteCreateSession) == 2 }, 5*time.Second, 10*time.Millisecond, "a new session")
	assert.Greater(t, env.fake.Calls(fakegithub.RouteRunnerRegistration), exchanges, "a new admin token")
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "demand flows again")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	reason, _ := st.Waiting()
	assert.NoError(t, reason, "serving again")
}

func TestScaleSetRecreatesVanishedScaleSet(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	target := scaleSetTarget(t, repoScope(t), "", setName)
	st := newScaleSet(t, env, target, github.ScaleSetOptions{Journal: newMemJournal()})
	oldID := st.ScaleSetID()
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	// Someone deletes the scale set (its session goes with it).
	other, err := github.NewScaleSetTarget(t.Context(), env.client, target, github.ScaleSetOptions{Owner: "remover", DeleteOnClose: true, DisableUpdate: true})
	require.NoError(t, err)
	require.NoError(t, other.Close(t.Context()))

	// The watch may have created it again already: only the id tells.
	require.Eventually(t, func() bool { r, ok := env.scaleSet(setName); return ok && r.ID != oldID }, 5*time.Second, 10*time.Millisecond, "created again")
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "demand flows through the new scale set")
	assert.NotEqual(t, oldID, st.ScaleSetID())
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	jit, err := st.JITConfig(t.Context(), prefix+"after")
	require.NoError(t, err)
	reg, ok := env.runner(prefix + "after")
	require.True(t, ok)
	assert.Equal(t, st.ScaleSetID(), reg.ScaleSetID)
	assert.NotZero(t, jit.RunnerID)
}

func TestScaleSetJITConfigFindsVanishedScaleSet(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	target := scaleSetTarget(t, repoScope(t), "", setName)
	st := newScaleSet(t, env, target, github.ScaleSetOptions{})
	other, err := github.NewScaleSetTarget(t.Context(), env.client, target, github.ScaleSetOptions{Owner: "remover", DeleteOnClose: true, DisableUpdate: true})
	require.NoError(t, err)
	require.NoError(t, other.Close(t.Context()))

	jit, err := st.JITConfig(t.Context(), prefix+"j1")
	require.NoError(t, err, "the scale set is created again and the runner registered in it")
	reg, ok := env.runner(prefix + "j1")
	require.True(t, ok)
	assert.Equal(t, st.ScaleSetID(), reg.ScaleSetID)
	assert.Equal(t, jit.RunnerID, reg.ID)
}

func TestScaleSetAcquireFailureKeepsJobs(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{Journal: newMemJournal()})
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	env.fake.Fault(fakegithub.RouteAcquireJobs, fakegithub.Fault{Status: http.StatusInternalServerError, Times: 2})
	id := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, func() bool {
		j, ok := env.fake.Job(id)
		return ok && !j.AcquiredAt.IsZero()
	}, 5*time.Second, 10*time.Millisecond, "the job is acquired once acquiring works again")
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, env.fake.Calls(fakegithub.RouteCreateSession), 3, "a new session after each failed acquisition")
	assert.Equal(t, "host-a", env.sessionOwner(setName))
}

func TestScaleSetRunnersCannotList(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	_, err := st.JITConfig(t.Context(), prefix+"r1")
	require.NoError(t, err)
	rest := env.fake.CallsREST()
	_, err = st.Runners(t.Context(), prefix)
	require.ErrorIs(t, err, rm.ErrCannotList)
	assert.Equal(t, rest, env.fake.CallsREST(), "no REST list is read")
}
