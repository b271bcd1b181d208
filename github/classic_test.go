package github_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newClassic(t *testing.T, env *fakeEnv, target rm.ScaleTarget, opts github.ClassicOptions) *github.ClassicTarget {
	t.Helper()
	if opts.NamePrefix == "" {
		opts.NamePrefix = prefix
	}
	if opts.OS == "" {
		opts.OS, opts.Arch = "linux", "amd64"
	}
	ct, err := github.NewClassicTarget(env.client, target, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ct.Close(t.Context()) })
	return ct
}

func TestClassicRegistrar(t *testing.T) {
	for _, kind := range authKinds {
		t.Run(kind, func(t *testing.T) {
			env := newFakeEnv(t, kind)
			ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
			ctx := t.Context()

			jit, err := ct.JITConfig(ctx, prefix+"one")
			require.NoError(t, err)
			assert.NotZero(t, jit.RunnerID)
			assert.Equal(t, prefix+"one", jit.RunnerName)
			_, err = base64.StdEncoding.DecodeString(jit.Encoded)
			require.NoError(t, err, "the JIT config is base64")
			assert.NotContains(t, fmt.Sprint(jit), jit.Encoded, "String hides the config")

			reg, ok := env.runner(prefix + "one")
			require.True(t, ok)
			assert.Equal(t, jit.RunnerID, reg.ID)
			assert.ElementsMatch(t, []string{"self-hosted", "Linux", "X64", "gpu"}, reg.Labels)
			assert.EqualValues(t, 1, reg.GroupID, "the Default group")
			assert.True(t, reg.Ephemeral)

			// The same name again: the fake answers 409, the old
			// registration (ours) is removed and the name registered anew.
			again, err := ct.JITConfig(ctx, prefix+"one")
			require.NoError(t, err)
			assert.NotEqual(t, jit.RunnerID, again.RunnerID)
			assert.Equal(t, 3, env.fake.Calls(fakegithub.RouteRepoJITConfig), "the first, the 409, the retry")
			assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteRepoDeleteRunner))

			_, err = ct.JITConfig(ctx, prefix+"two")
			require.NoError(t, err)
			_, err = ct.JITConfig(ctx, "someone-elses")
			require.NoError(t, err)

			runners, err := ct.Runners(ctx, prefix)
			require.NoError(t, err)
			names := make([]string, 0, len(runners))
			for _, r := range runners {
				names = append(names, r.Name)
				assert.False(t, r.Busy)
				assert.Contains(t, r.Labels, "gpu")
			}
			assert.ElementsMatch(t, []string{prefix + "one", prefix + "two"}, names)

			require.NoError(t, ct.RemoveRunner(ctx, again.RunnerID))
			_, ok = env.runner(prefix + "one")
			assert.False(t, ok)
			require.NoError(t, ct.RemoveRunner(ctx, again.RunnerID), "removing a removed runner is not an error")
		})
	}
}

func TestClassicNameOfAnother(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	_, err := ct.JITConfig(t.Context(), "their-runner")
	require.NoError(t, err)
	_, err = ct.JITConfig(t.Context(), "their-runner")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not ours")
	_, ok := env.runner("their-runner")
	assert.True(t, ok, "a runner that is not ours is never removed")
}

func TestClassicRunnerBusy(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	jit, err := ct.JITConfig(t.Context(), prefix+"busy")
	require.NoError(t, err)
	env.fake.Fault(fakegithub.RouteRepoDeleteRunner, fakegithub.Fault{Status: http.StatusUnprocessableEntity, Times: 1})
	err = ct.RemoveRunner(t.Context(), jit.RunnerID)
	require.ErrorIs(t, err, rm.ErrRunnerBusy)
	_, ok := env.runner(prefix + "busy")
	assert.True(t, ok)
}

func TestClassicRunnersEveryPage(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	for i := range 130 {
		_, err := ct.JITConfig(t.Context(), fmt.Sprintf("%s%03d", prefix, i))
		require.NoError(t, err)
	}
	for i := range 5 {
		_, err := ct.JITConfig(t.Context(), fmt.Sprintf("other-%d", i))
		require.NoError(t, err)
	}
	env.fake.ResetCalls()
	runners, err := ct.Runners(t.Context(), prefix)
	require.NoError(t, err)
	assert.Len(t, runners, 130)
	assert.Equal(t, 2, env.fake.Calls(fakegithub.RouteRepoRunners), "135 runners are two pages of 100")

	before := env.remaining()
	runners, err = ct.Runners(t.Context(), prefix)
	require.NoError(t, err)
	assert.Len(t, runners, 130)
	assert.Equal(t, before, env.remaining(), "an unchanged list is revalidated for free")
}

func TestClassicRunnerGroups(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	gid := env.fake.AddRunnerGroup(org, "builders")

	ct := newClassic(t, env, labelTarget(t, org, "Builders", "gpu"), github.ClassicOptions{})
	_, err = ct.JITConfig(t.Context(), prefix+"g1")
	require.NoError(t, err)
	_, err = ct.JITConfig(t.Context(), prefix+"g2")
	require.NoError(t, err)
	reg, ok := env.runner(prefix + "g1")
	require.True(t, ok)
	assert.Equal(t, gid, reg.GroupID)
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteOrgRunnerGroups), "the group id is looked up once")

	missing := newClassic(t, env, labelTarget(t, org, "nope", "gpu"), github.ClassicOptions{})
	_, err = missing.JITConfig(t.Context(), prefix+"g3")
	require.ErrorIs(t, err, rm.ErrNotFound)
	assert.Contains(t, err.Error(), "nope")

	repoGroup := newClassic(t, env, labelTarget(t, repoScope(t), "builders", "gpu"), github.ClassicOptions{})
	_, err = repoGroup.JITConfig(t.Context(), prefix+"g4")
	require.ErrorIs(t, err, rm.ErrInvalid)
}

func TestClassicErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(env *fakeEnv)
		scope   string
		wantErr error
		wantMsg string
	}{
		{"UnknownRepo", nil, "repo:octo-org/missing", rm.ErrNotFound, "octo-org/missing"},
		{"UnknownOrg", nil, "org:nobody", rm.ErrNotFound, "organization nobody"},
		{"Revoked", func(env *fakeEnv) { env.fake.RevokeToken(fakeToken) }, "repo:" + fakeRepo, rm.ErrUnauthorized, "invalid, revoked or expired"},
		{"Forbidden", func(env *fakeEnv) {
			env.fake.Fault(fakegithub.RouteRepoJITConfig, fakegithub.Fault{Status: http.StatusForbidden})
			env.fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Status: http.StatusForbidden})
		}, "repo:" + fakeRepo, rm.ErrUnauthorized, "administration:write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newFakeEnv(t, "PAT")
			if tt.setup != nil {
				tt.setup(env)
			}
			scope, err := rm.ParseScope(tt.scope)
			require.NoError(t, err)
			ct := newClassic(t, env, labelTarget(t, scope, "", "gpu"), github.ClassicOptions{})
			_, err = ct.JITConfig(t.Context(), prefix+"x")
			require.ErrorIs(t, err, tt.wantErr)
			assert.Contains(t, err.Error(), tt.wantMsg)
			env.noSecret(t, err)
			_, err = ct.Runners(t.Context(), prefix)
			require.ErrorIs(t, err, tt.wantErr)
			env.noSecret(t, err)
		})
	}
}

func TestClassicDefaultLabels(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	tests := []struct {
		name string
		opts github.ClassicOptions
		want []string
	}{
		{"LinuxX64", github.ClassicOptions{OS: "linux", Arch: "amd64"}, []string{"self-hosted", "Linux", "X64", "gpu"}},
		{"MacARM", github.ClassicOptions{OS: "darwin", Arch: "arm64", Labels: []string{"xcode"}}, []string{"self-hosted", "macOS", "ARM64", "gpu", "xcode"}},
		{"Windows", github.ClassicOptions{OS: "windows", Arch: "amd64"}, []string{"self-hosted", "Windows", "X64", "gpu"}},
		{"NoDefaults", github.ClassicOptions{NoDefaultLabels: true, OS: "linux", Arch: "amd64"}, []string{"gpu"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), tt.opts)
			assert.Equal(t, tt.want, ct.Labels())
			name := fmt.Sprintf("%slabels-%d", prefix, i)
			_, err := ct.JITConfig(t.Context(), name)
			require.NoError(t, err)
			reg, ok := env.runner(name)
			require.True(t, ok)
			assert.ElementsMatch(t, tt.want, reg.Labels)
		})
	}
	def, err := github.NewClassicTarget(env.client, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{})
	require.NoError(t, err)
	assert.Contains(t, def.Labels(), github.OSLabel(runtime.GOOS), "this host's OS by default")
}

func TestClassicDemandPoll(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	ours := []string{"self-hosted", "linux", "gpu"}
	for range 3 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: ours})
	}
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "windows"}})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"ubuntu-latest"}})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: "octo-org/other", Labels: ours})

	log, _ := watch(t, ct, fixed(10))
	require.Eventually(t, log.wanted(3), 5*time.Second, 10*time.Millisecond)

	// An unchanged poll costs nothing: every list is revalidated with 304.
	before, polls := env.remaining(), log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	d, _ := log.last()
	assert.Equal(t, 3, d.Wanted)
	assert.Equal(t, before, env.remaining(), "an unchanged poll is free")

	// A new job shows at the next nudge (a webhook's).
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	ct.Notify(github.WorkflowJobEvent{Action: "queued", Repository: fakeRepo, Labels: []string{"gpu"}})
	require.Eventually(t, log.wanted(4), 5*time.Second, 10*time.Millisecond)
}

func TestClassicDemandWaitsOutRateLimit(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	env.fake.SetRateLimit(2)
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})

	log, _ := watch(t, ct, fixed(1))
	// Two lists spend the budget; the jobs list is refused without a call.
	require.Eventually(t, func() bool { return len(env.sleeps.all()) > 0 }, 5*time.Second, 10*time.Millisecond)
	_, _, reset := env.fake.RateLimit()
	waits := env.sleeps.all()
	assert.InDelta(t, time.Until(reset).Seconds(), waits[0].Seconds(), 2, "Watch waits until the reset")
	assert.Equal(t, 0, env.fake.Calls(fakegithub.RouteRunJobs), "nothing is sent while the budget is exhausted")
	assert.Equal(t, 0, log.count())
}

func TestClassicFatalErrorsEndWatch(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	missing, err := rm.Repository("octo-org/missing")
	require.NoError(t, err)
	ct := newClassic(t, env, labelTarget(t, missing, "", "gpu"), github.ClassicOptions{})
	_, done := watch(t, ct, fixed(1))
	select {
	case err := <-done:
		require.ErrorIs(t, err, rm.ErrNotFound)
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not end on a missing repository")
	}
}

func TestClassicTransientErrorsRetried(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	// More 502s than the transport's tries: Watch itself backs off.
	env.fake.Fault(fakegithub.RouteRepoRuns, fakegithub.Fault{Status: http.StatusBadGateway, Times: 6})
	log, _ := watch(t, ct, fixed(1))
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, len(env.sleeps.all()), 4)
	assert.Contains(t, env.logs.String(), "demand poll failed")
}
