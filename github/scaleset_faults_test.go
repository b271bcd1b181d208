package github_test

import (
	"strings"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Actions service's failures that GitHub's code or incidents show,
// each met by one watch that must serve the next job after it, log it
// once, and leave the fake with one live session of its own.

func TestScaleSetSessionWithoutQueueURL(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	env.fake.SetEmptyQueueURL(3)
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "served once a session comes with its URL")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	assert.Equal(t, 4, env.fake.Calls(fakegithub.RouteCreateSession), "three without a URL, then one with it")
	assert.Equal(t, 3, env.fake.Calls(fakegithub.RouteDeleteSession), "each session without a URL was deleted, so no create met 409")
	assert.Len(t, env.sleeps.all(), 3, "each new try waited its backoff")
	rec, _ := env.scaleSet(setName)
	assert.Equal(t, "host-a", rec.SessionOwner)
	logs := env.logs.String()
	assert.Equal(t, 1, warnings(logs, "without a message-queue URL"), "said once, at WARN")
	assert.NotContains(t, logs, "unsupported protocol scheme", "an empty URL is never polled")
	assert.Contains(t, logs, "scale-set watch serving again")
}

func TestScaleSetRefreshWithoutQueueURL(t *testing.T) {
	env := newFakeEnv(t, "PAT", fakegithub.WithQueueTokenLifetime(200*time.Millisecond))
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	env.fake.SetEmptyQueueURL(1) // the next refresh answers without it
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteCreateSession) == 2 }, 5*time.Second, 10*time.Millisecond,
		"the refreshed session without a URL is replaced")
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, env.fake.Calls(fakegithub.RouteDeleteSession), 1)
}

func TestScaleSetForgottenSessions(t *testing.T) {
	// actions/scaleset #123: after a broker restart the refresh 404s and
	// the old queue token 401s; a new session must be opened.
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteMessages) > 0 }, 5*time.Second, 10*time.Millisecond)
	env.fake.ForgetSessions()
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "demand flows through a new session")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteCreateSession))
	assert.GreaterOrEqual(t, env.fake.Calls(fakegithub.RouteRefreshSession), 1, "the 401 was answered with a refresh first")
	logs := env.logs.String()
	assert.Contains(t, logs, "no longer knows the message session", "the loss is named as such")
	assert.NotContains(t, logs, "does not exist or the credentials cannot see it", "not as a missing repository")
}

func TestScaleSetDeletedByGitHub(t *testing.T) {
	// actions/actions-runner-controller #3935, #4370.
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	oldID := st.ScaleSetID()
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteMessages) > 0 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, env.fake.DeleteScaleSet(setName))
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "the scale set is made again and serves")
	rec, ok := env.scaleSet(setName)
	require.True(t, ok)
	assert.NotEqual(t, oldID, rec.ID)
	assert.Equal(t, rec.ID, st.ScaleSetID())
	assert.Contains(t, env.logs.String(), "created again")
}

func TestScaleSetDirectAssignment(t *testing.T) {
	// As github.com is reported to assign: JobAssigned with no
	// JobAvailable, and acquirejobs answering 404.
	env := newFakeEnv(t, "PAT", fakegithub.WithDirectAssignment())
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	for range 3 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	}
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, log.wanted(2), 5*time.Second, 10*time.Millisecond, "GitHub assigns up to the capacity")
	assert.Len(t, eventsOf(log.events(), rm.JobAssigned), 2)
	assert.Zero(t, env.fake.Calls(fakegithub.RouteAcquireJobs), "nothing offered, nothing to acquire")
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteCreateSession), "the session is kept")
}

func TestScaleSetAcquireNotFoundKeepsSession(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
	log, _ := watch(t, st, fixed(2))
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteMessages) > 0 }, 5*time.Second, 10*time.Millisecond)
	env.fake.Fault(fakegithub.RouteAcquireJobs, fakegithub.Fault{Status: 404, Times: 1})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteAcquireJobs) == 1 }, 5*time.Second, 10*time.Millisecond)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, func() bool { return env.fake.Calls(fakegithub.RouteAcquireJobs) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteCreateSession), "a 404 on acquire does not restart the session")
}

func TestScaleSetOwnSessionWithoutRecord(t *testing.T) {
	// A create whose answer was cut off: GitHub holds a session under this
	// manager's name that the journal cannot name. The watch says why it
	// waits, and serves as soon as GitHub lets the session go.
	env := newFakeEnv(t, "PAT")
	env.fake.CutSessionCreates(1)
	st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName),
		github.ScaleSetOptions{Journal: newMemJournal(), SessionConflictRetries: 1})
	log, done := watch(t, st, fixed(2))
	require.Eventually(t, func() bool {
		reason, _ := st.Waiting()
		return reason != nil && strings.Contains(reason.Error(), "waiting for GitHub to let it go")
	}, 10*time.Second, 10*time.Millisecond, "the watch says why it waits")
	reason, _ := st.Waiting()
	require.ErrorIs(t, reason, rm.ErrSessionConflict)
	assert.Contains(t, reason.Error(), "this manager's own name")
	assert.Contains(t, reason.Error(), "no record")
	assert.Zero(t, log.count(), "nothing was served meanwhile")

	require.Equal(t, 1, env.fake.DropSessionsOf(setName, "host-a"), "GitHub lets it go")
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "the same watch serves: it never gave up")
	select {
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	default:
	}
	reason, _ = st.Waiting()
	assert.NoError(t, reason)
	assert.Equal(t, 1, warnings(env.logs.String(), "this manager's own name"), "said once")
}

// warnings counts the WARN lines of logs that contain text.
func warnings(logs, text string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, text) {
			n++
		}
	}
	return n
}

// A backlog beyond the capacity told to GitHub is what waits there: the
// scale set acquired (or was given) those jobs, and GitHub holds them
// until capacity frees, so Queued counts them beside the ones offered.
func TestScaleSetBacklogIsQueued(t *testing.T) {
	for _, direct := range []bool{false, true} {
		name := "Acquire"
		var opts []fakegithub.Option
		if direct {
			name, opts = "Direct", []fakegithub.Option{fakegithub.WithDirectAssignment()}
		}
		t.Run(name, func(t *testing.T) {
			env := newFakeEnv(t, "PAT", opts...)
			st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
			for range 5 {
				env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
			}
			log, _ := watch(t, st, fixed(2))
			require.Eventually(t, func() bool {
				d, ok := log.last()
				return ok && d.Wanted == 2 && d.Queued == 3
			}, 5*time.Second, 10*time.Millisecond, "2 assigned, 3 waiting at GitHub")
		})
	}
}
