package github_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
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

// TestClassicPollSparesALowBudget: once the REST budget is down to its
// reserve, the demand poll waits (up to the reset) instead of polling at
// its interval, and says so; a nudge still polls at once.
func TestClassicPollSparesALowBudget(t *testing.T) {
	env := newFakeEnv(t, "PAT", fakegithub.WithRateLimit(100))
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: 50 * time.Millisecond, BusyPollInterval: 50 * time.Millisecond})
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 10*time.Second, 10*time.Millisecond, "the first poll")
	lists := listCalls(env)
	require.Eventually(t, func() bool { return listCalls(env) >= lists+9 }, 10*time.Second, 10*time.Millisecond, "polls at the interval while the budget is full")

	// Spend the budget down to its reserve (a tenth) with charged calls.
	for env.remaining() > 10 {
		_, _, err := ct.LookupRunner(t.Context(), 424242, "")
		require.NoError(t, err)
	}
	// The next poll (charged or not) sees the headers; after it, none for
	// a second, where the interval would have made about twenty. The
	// nudged poll has ended once it reported (a nudged poll reports to
	// every target); the poll under way at the nudge may report first, so
	// one poll may still come after that.
	polls := log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 10*time.Second, 10*time.Millisecond, "a nudge polls at once")
	assert.Contains(t, env.logs.String(), "demand polls slowed to spare the REST budget")
	lists = listCalls(env)
	time.Sleep(time.Second) // a window to count polls in, not a wait for one
	assert.LessOrEqual(t, listCalls(env), lists+3, "at most the nudged poll, then none at a spent budget")

	polls = log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 10*time.Second, 10*time.Millisecond, "a nudge still polls")
}
