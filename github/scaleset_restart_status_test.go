package github_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScaleSetRestartAfterKillEitherStatus is issue 23: a manager killed
// with its session open restarts, deletes that session through the
// hand-written runner-registration exchange and serves, whether GitHub
// answers the exchange 200 or 201 (GitHub's own test servers answer 201),
// and when the exchange is refused twice first (a 401 is retried, as
// actions/scaleset retries it). No credential reaches the log
// (newFakeEnv's cleanup checks it).
func TestScaleSetRestartAfterKillEitherStatus(t *testing.T) {
	for _, tc := range []struct {
		status  int
		refused int // 401s the restarted manager's exchange gets first
	}{
		{status: http.StatusOK},
		{status: http.StatusCreated},
		{status: http.StatusCreated, refused: 2},
	} {
		t.Run(strconv.Itoa(tc.status)+"/refused"+strconv.Itoa(tc.refused), func(t *testing.T) {
			t.Parallel()
			env := newFakeEnv(t, "PAT", fakegithub.WithRunnerRegistrationStatus(tc.status))
			journal := newMemJournal()
			target := scaleSetTarget(t, repoScope(t), "", setName)
			opts := github.ScaleSetOptions{Owner: "host-a/1234", HostID: "h-1", Journal: journal}

			first := newScaleSet(t, env, target, opts)
			log1, kill := crash(t, first, fixed(2))
			require.Eventually(t, func() bool { return log1.count() > 0 }, 5*time.Second, 10*time.Millisecond)
			stale := journal.only(t).SessionID
			kill()
			require.Equal(t, "host-a/1234", env.sessionOwner(setName), "a killed manager's session stays at GitHub")

			second := newScaleSet(t, env, target, opts)
			if tc.refused > 0 {
				// The answer quotes a credential: it must not be printed.
				env.fake.Fault(fakegithub.RouteRunnerRegistration, fakegithub.Fault{
					Status: http.StatusUnauthorized, Times: tc.refused,
					Body: `{"message":"Bad credentials ` + fakeToken + `"}`,
				})
			}
			before := env.fake.Calls(fakegithub.RouteRunnerRegistration)
			env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}})
			log2, done := watch(t, second, fixed(2))
			require.Eventually(t, log2.wanted(1), 10*time.Second, 10*time.Millisecond, "the restarted manager serves")
			select {
			case err := <-done:
				t.Fatalf("Watch ended: %v", err)
			default:
			}
			assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteDeleteSession), "the stale session was deleted by id")
			assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteCreateSession), "and a new one opened without a conflict")
			assert.Equal(t, tc.refused+1, env.fake.Calls(fakegithub.RouteRunnerRegistration)-before, "the exchange was tried again after each 401")
			assert.NotEqual(t, stale, journal.only(t).SessionID)
			logs := env.logs.String()
			assert.Equal(t, tc.refused, strings.Count(logs, "GitHub call failed, retrying"), logs)
			if tc.refused > 0 {
				waits := env.sleeps.all()
				assert.True(t, slices.Contains(waits, time.Second) && slices.Contains(waits, 2*time.Second), "1 s, then 2 s: %v", waits)
			}
		})
	}
}
