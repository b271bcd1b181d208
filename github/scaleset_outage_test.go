package github_test

import (
	"context"
	"sync"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaledSleeps records each wait asked for and sleeps a twentieth of it
// for real, so a watch backing off against a fake that refuses everything
// neither spins nor takes the test's whole budget, and the waits it asked
// for can be added up as the time it would have taken.
type scaledSleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *scaledSleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	t := time.NewTimer(d / 20)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// since returns the waits asked for from index i on, and their sum.
func (s *scaledSleeps) since(i int) ([]time.Duration, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]time.Duration(nil), s.d[min(i, len(s.d)):]...)
	var sum time.Duration
	for _, d := range out {
		sum += d
	}
	return out, sum
}

func (s *scaledSleeps) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

// scaledClient is a PAT client of env's fake whose waits are scaled down.
func scaledClient(t *testing.T, env *fakeEnv) (*github.Client, *scaledSleeps) {
	t.Helper()
	sl := &scaledSleeps{}
	c, err := github.New(github.Config{WebURL: env.fake.URL(), APIURL: env.fake.APIURL(), Token: fakeToken, Logger: newTextLogger(env.logs), Sleep: sl.Sleep})
	require.NoError(t, err)
	return c, sl
}

func TestScaleSetResumesAfterRevokedCredentials(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	client, sl := scaledClient(t, env)
	target := scaleSetTarget(t, repoScope(t), "", setName)
	st, err := github.NewScaleSetTarget(t.Context(), client, target, withPrefix(github.ScaleSetOptions{Owner: "host-a", Journal: newMemJournal()}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	env.fake.RevokeCredentials()
	require.Eventually(t, func() bool { r, _ := st.Waiting(); return r != nil }, 5*time.Second, 10*time.Millisecond)
	reason, since := st.Waiting()
	require.ErrorIs(t, reason, rm.ErrUnauthorized, "the status can say why it waits")
	assert.False(t, since.IsZero())
	// Let it fail a few times: the waits grow from about a second.
	require.Eventually(t, func() bool { return sl.count() >= 4 }, 10*time.Second, 10*time.Millisecond)
	waits, _ := sl.since(0)
	assert.LessOrEqual(t, waits[0], time.Second)
	assert.Greater(t, waits[3], waits[0], "backoff")
	for _, w := range waits {
		assert.LessOrEqual(t, w, 30*time.Second)
	}

	// The wait under way at the restore counts in full.
	restoredAt := sl.count() - 1
	env.fake.RestoreCredentials()
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 20*time.Second, 10*time.Millisecond, "demand flows again after the restore")
	_, waited := sl.since(restoredAt)
	t.Logf("serving again after %v of backoff from the restore", waited)
	assert.LessOrEqual(t, waited, 30*time.Second, "resumed within 30 s")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	r, _ := st.Waiting()
	assert.NoError(t, r)
	assert.Equal(t, "host-a", env.sessionOwner(setName))

	// Registrations work again, with the renewed admin token.
	_, err = st.JITConfig(t.Context(), prefix+"after-revoke")
	require.NoError(t, err)
}

func TestScaleSetJITConfigAfterRevokedCredentials(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	_, err := st.JITConfig(t.Context(), prefix+"before")
	require.NoError(t, err)
	env.fake.RevokeCredentials()
	_, err = st.JITConfig(t.Context(), prefix+"during")
	require.ErrorIs(t, err, rm.ErrUnauthorized)
	env.noSecret(t, err)
	env.fake.RestoreCredentials()
	_, err = st.JITConfig(t.Context(), prefix+"after")
	require.NoError(t, err, "a new registration and admin token, without a new target")
	_, found, err := st.LookupRunner(t.Context(), 0, prefix+"after")
	require.NoError(t, err)
	assert.True(t, found)
}

func TestScaleSetResumesAfterGitHubRestart(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	client, sl := scaledClient(t, env)
	target := scaleSetTarget(t, repoScope(t), "", setName)
	journal := newMemJournal()
	st, err := github.NewScaleSetTarget(t.Context(), client, target, withPrefix(github.ScaleSetOptions{Owner: "host-a", Journal: journal}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	oldID := st.ScaleSetID()
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)

	from := sl.count() // no wait under way: the watch is polling
	start := time.Now()
	env.fake.Restart()
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 20*time.Second, 10*time.Millisecond, "the scale set is created again and serves")
	_, waited := sl.since(from)
	t.Logf("serving again %v after the restart (%v of backoff asked for)", time.Since(start), waited)
	assert.LessOrEqual(t, waited, 30*time.Second)
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	rec, ok := env.scaleSet(setName)
	require.True(t, ok)
	assert.Equal(t, rec.ID, st.ScaleSetID())
	t.Logf("scale set %d became %d", oldID, rec.ID)
	assert.Equal(t, "host-a", rec.SessionOwner)
	assert.Equal(t, rec.ID, journal.only(t).ScaleSetID, "the new session is the one recorded")

	_, err = st.JITConfig(t.Context(), prefix+"after-restart")
	require.NoError(t, err)
}
