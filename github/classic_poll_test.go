package github_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/github/fakegithub"
)

// TestClassicDefaultPoll: at the default poll a queued job is seen within
// about a poll, and every poll of an unchanged repository is answered 304,
// costing no quota, and wakes no target.
func TestClassicDefaultPoll(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for real polls")
	}
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 10*time.Second, 10*time.Millisecond, "the first poll")

	// Unchanged for three polls: requests made, none charged, and the
	// target is not woken for nothing.
	before, lists, reports := env.remaining(), listCalls(env), log.count()
	require.Eventually(t, func() bool { return listCalls(env) >= lists+9 }, 4*github.DefaultClassicPoll+10*time.Second, 10*time.Millisecond)
	assert.Equal(t, before, env.remaining(), "polls of an unchanged repository cost no quota")
	assert.Equal(t, reports, log.count(), "an unchanged figure is not reported again within 30 s")

	queued := time.Now()
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	require.Eventually(t, log.wanted(1), github.DefaultClassicPoll+20*time.Second, 10*time.Millisecond)
	seen := time.Since(queued)
	t.Logf("queued job seen after %s (poll %s)", seen.Round(time.Millisecond), github.DefaultClassicPoll)
	assert.Less(t, seen, 10*time.Second, "seen within about a poll (the old 30 s poll would miss this)")
}
