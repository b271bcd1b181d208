package github_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// failingJournal fails its first n RecordSession calls.
type failingJournal struct {
	*memJournal
	mu    sync.Mutex
	fails int
	tries int
}

func (j *failingJournal) RecordSession(ctx context.Context, r rm.SessionRecord) error {
	j.mu.Lock()
	j.tries++
	fail := j.tries <= j.fails
	j.mu.Unlock()
	if fail {
		return errors.New("database is locked")
	}
	return j.memJournal.RecordSession(ctx, r)
}

func (j *failingJournal) recorded() bool {
	j.memJournal.mu.Lock()
	defer j.memJournal.mu.Unlock()
	return len(j.memJournal.m) == 1
}

// TestSessionRecordRetried: a session record the journal refused is
// written later while the session serves (a job is served before it is),
// so a crash after that is recovered as usual: the next start deletes its
// own stale session by id and serves at once.
func TestSessionRecordRetried(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	journal := &failingJournal{memJournal: newMemJournal(), fails: 2}
	target := scaleSetTarget(t, repoScope(t), "", setName)
	opts := github.ScaleSetOptions{Owner: "host-a/77", HostID: "h-1", Journal: journal}

	first := newScaleSet(t, env, target, opts)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	log1, kill := crash(t, first, fixed(2))
	require.Eventually(t, log1.wanted(1), 5*time.Second, 10*time.Millisecond, "serving is not held by the journal")
	assert.False(t, journal.recorded(), "the first write failed")
	require.Eventually(t, journal.recorded, 10*time.Second, 20*time.Millisecond, "the record is written by a retry")
	journal.mu.Lock()
	assert.Equal(t, 3, journal.tries, "two failures, then written, then no more tries")
	journal.mu.Unlock()
	kill()

	second := newScaleSet(t, env, target, opts)
	log2, _ := watch(t, second, fixed(2))
	require.Eventually(t, func() bool { return log2.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteSession), "the stale session was deleted by id")
	assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteCreateSession), "and a new one opened without a conflict")
}
