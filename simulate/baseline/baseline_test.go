package baseline_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/baseline"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// The baseline serves a scale set as the example does: a runner per job,
// never more than max at once, each runner gone with its job.
func TestBaselineServesJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fake runners")
	}
	const token, repo = "ghp_baseline", "acme/app"
	install := githubtest.BuildFakeRunner(t)
	s := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo(repo))
	client, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: s.URL() + "/" + repo, PersonalAccessToken: token,
		SystemInfo: scaleset.SystemInfo{System: "baseline-test"},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	b, err := baseline.Start(ctx, baseline.Config{Client: client, ScaleSet: "base", MaxRunners: 2,
		Listener: filepath.Join(install, "bin", fakegithub.ListenerName()), WorkDir: t.TempDir(), Owner: "test"})
	require.NoError(t, err)
	for range 5 {
		s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"base"}, Duration: 100 * time.Millisecond})
	}
	require.NoError(t, s.WaitJobsCompleted(ctx))
	require.NoError(t, b.Stop())
	jobs := s.Jobs()
	require.Len(t, jobs, 5)
	runners := map[string]bool{}
	for _, j := range jobs {
		assert.Equal(t, fakegithub.ResultSucceeded, j.Result)
		assert.False(t, runners[j.RunnerName], "one job per runner")
		runners[j.RunnerName] = true
	}
	assert.GreaterOrEqual(t, len(b.Runners()), 5)
	for _, r := range b.Runners() {
		assert.False(t, r.Exited.IsZero(), "no runner outlives Stop: %s", r.Name)
	}
}
