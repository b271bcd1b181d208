package github_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests prove the transport against the fake GitHub: its call
// counters and budget say what was really sent.

func TestFakeExhaustedBudget(t *testing.T) {
	for _, kind := range authKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := newFakeEnv(t, kind)
			ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
			ctx := t.Context()
			env.fake.SetRateLimitWindow(1500 * time.Millisecond)
			env.fake.SetRateLimit(3)

			for i := range 3 {
				_, err := ct.JITConfig(ctx, prefix+string(rune('a'+i)))
				require.NoError(t, err)
			}
			assert.Equal(t, 0, env.client.Budget().Remaining)
			sent := env.fake.Calls(fakegithub.RouteRepoJITConfig) + env.fake.Calls(fakegithub.RouteRepoRunners)

			for range 5 {
				_, err := ct.JITConfig(ctx, prefix+"refused")
				var rle *rm.RateLimitError
				require.ErrorAs(t, err, &rle)
				assert.False(t, rle.Secondary)
				_, err = ct.Runners(ctx, prefix)
				require.ErrorAs(t, err, &rle)
				env.noSecret(t, err)
			}
			assert.Equal(t, sent, env.fake.Calls(fakegithub.RouteRepoJITConfig)+env.fake.Calls(fakegithub.RouteRepoRunners),
				"no request reaches GitHub while the budget is exhausted")

			reset := env.client.Budget().Reset
			require.Eventually(t, func() bool {
				_, err := ct.Runners(ctx, prefix)
				return err == nil
			}, 5*time.Second, 50*time.Millisecond)
			assert.False(t, time.Now().Before(reset), "requests resumed only after the reset")
		})
	}
}

func TestFakeSecondaryLimit(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	ctx := t.Context()
	assert.True(t, env.client.SecondaryHold().IsZero(), "no hold before a limit")
	env.fake.SecondaryLimit(time.Second, 1)

	_, err := ct.Runners(ctx, prefix)
	var rle *rm.RateLimitError
	require.ErrorAs(t, err, &rle)
	assert.True(t, rle.Secondary)
	assert.WithinDuration(t, time.Now().Add(time.Second), rle.Reset, 500*time.Millisecond)
	assert.Equal(t, rle.Reset, env.client.SecondaryHold(), "the client tells until when it holds")
	calls := env.fake.CallsREST()

	for range 5 {
		_, err = ct.JITConfig(ctx, prefix+"x")
		require.ErrorAs(t, err, &rle)
		assert.True(t, rle.Secondary)
	}
	assert.Equal(t, calls, env.fake.CallsREST(), "nothing is sent before retry-after elapsed")

	require.Eventually(t, func() bool {
		_, err := ct.Runners(ctx, prefix)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	assert.Equal(t, 0, env.fake.SecondaryLimitViolations(), "retry-after was honoured")
	assert.True(t, env.client.SecondaryHold().IsZero(), "no hold once it lifted")
}

func TestFakeServerErrorsAndDrops(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	ctx := t.Context()

	env.fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Status: http.StatusBadGateway, Times: 3})
	_, err := ct.Runners(ctx, prefix)
	require.NoError(t, err, "a GET survives a storm of 5xx")
	assert.Equal(t, 4, env.fake.Calls(fakegithub.RouteRepoRunners))

	env.fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Drop: true, Times: 2})
	_, err = ct.Runners(ctx, prefix)
	require.NoError(t, err, "a GET survives dropped connections")
	assert.Equal(t, 7, env.fake.Calls(fakegithub.RouteRepoRunners))

	env.fake.Fault(fakegithub.RouteRepoJITConfig, fakegithub.Fault{Status: http.StatusBadGateway, Times: 1})
	_, err = ct.JITConfig(ctx, prefix+"p1")
	require.Error(t, err, "a POST is not retried blindly")
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteRepoJITConfig))

	env.fake.Fault(fakegithub.RouteRepoJITConfig, fakegithub.Fault{Drop: true, Times: 1})
	_, err = ct.JITConfig(ctx, prefix+"p2")
	require.Error(t, err)
	assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteRepoJITConfig))

	env.fake.Fault(fakegithub.RouteRepoDeleteRunner, fakegithub.Fault{Status: http.StatusServiceUnavailable, Times: 2})
	jit, err := ct.JITConfig(ctx, prefix+"p3")
	require.NoError(t, err)
	require.NoError(t, ct.RemoveRunner(ctx, jit.RunnerID), "a DELETE is idempotent and retried")
	assert.Equal(t, 3, env.fake.Calls(fakegithub.RouteRepoDeleteRunner))
}

func TestFakeETagCostsNothing(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ctx := t.Context()
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	_, err := ct.JITConfig(ctx, prefix+"e1")
	require.NoError(t, err)

	first, err := ct.Runners(ctx, prefix)
	require.NoError(t, err)
	before := env.remaining()
	for range 5 {
		again, err := ct.Runners(ctx, prefix)
		require.NoError(t, err)
		assert.Equal(t, first, again)
	}
	assert.Equal(t, before, env.remaining(), "five revalidations (304) cost nothing")
	assert.Equal(t, before, env.client.Budget().Remaining)

	_, err = ct.JITConfig(ctx, prefix+"e2")
	require.NoError(t, err)
	changed, err := ct.Runners(ctx, prefix)
	require.NoError(t, err)
	assert.Len(t, changed, 2, "a changed list is fetched anew")
}

func TestFakeDownloads(t *testing.T) {
	for _, kind := range authKinds {
		t.Run(kind, func(t *testing.T) {
			env := newFakeEnv(t, kind)
			org, err := rm.Organization("octo-org")
			require.NoError(t, err)
			for _, scope := range []rm.Scope{repoScope(t), org} {
				list, err := env.client.RunnerDownloads(t.Context(), scope)
				require.NoError(t, err)
				require.NotEmpty(t, list)
				d, err := runnerpkg.PickDownload(list, runtime.GOOS, runtime.GOARCH)
				require.NoError(t, err)
				assert.NotEmpty(t, d.URL)
				assert.Len(t, d.SHA256, 64)

				resp, err := http.Get(d.URL)
				require.NoError(t, err)
				body := readAll(t, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.NotEmpty(t, body)
			}
		})
	}
}

// TestFakeWebhooks receives the fake's signed workflow_job deliveries and
// passes them to a classic target.
func TestFakeWebhooks(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	ct := newClassic(t, env, labelTarget(t, org, "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	var mu sync.Mutex
	var got []github.WorkflowJobEvent
	secret := "hook-secret"
	srv := httptest.NewServer(github.NewWebhookHandler([]byte(secret), func(e github.WorkflowJobEvent) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		ct.Notify(e)
	}))
	t.Cleanup(srv.Close)
	env.fake.DeliverWebhooks(srv.URL, secret)
	t.Cleanup(func() { env.fake.DeliverWebhooks("", "") })

	log, _ := watch(t, ct, fixed(1))
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"windows"}})
	require.Eventually(t, log.wanted(2), 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 }, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "queued", got[0].Action)
	assert.Equal(t, fakeRepo, got[0].Repository)
	assert.NotEmpty(t, got[0].Delivery)
}
