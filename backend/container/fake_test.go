//go:build linux

package container_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

const (
	fakeRepo  = "octo/containers"
	fakeToken = "ghp_container_tests"
	jobLabel  = "in-a-container"
	prefix    = "ctr-"
)

// fakeGitHub is a fake GitHub on loopback with a classic target whose
// runners take jobs labelled jobLabel.
type fakeGitHub struct {
	fake   *fakegithub.Server
	target *github.ClassicTarget
	seq    atomic.Int64
}

func newFakeGitHub(t testing.TB) *fakeGitHub {
	t.Helper()
	fake := githubtest.NewTestServer(t, fakegithub.WithToken(fakeToken), fakegithub.WithRepo(fakeRepo))
	c, err := github.New(github.Config{WebURL: fake.URL(), APIURL: fake.APIURL(), Token: fakeToken})
	require.NoError(t, err)
	scope, err := rm.Repository(fakeRepo)
	require.NoError(t, err)
	tg, err := rm.NewLabelTarget(scope, "", []string{jobLabel})
	require.NoError(t, err)
	ct, err := github.NewClassicTarget(c, tg, github.ClassicOptions{NamePrefix: prefix, OS: "linux", Arch: "amd64"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ct.Close(context.Background()) })
	return &fakeGitHub{fake: fake, target: ct}
}

// spec registers a runner and returns the launch spec of an attempt for it.
func (g *fakeGitHub) spec(t testing.TB, env ...string) (rm.LaunchSpec, rm.JITConfig) {
	t.Helper()
	jit, err := g.target.JITConfig(t.Context(), prefix+time.Now().Format("150405")+"-"+strconv.FormatInt(g.seq.Add(1), 10))
	require.NoError(t, err)
	return rm.LaunchSpec{Attempt: rm.NewAttemptID(), JITConfig: jit.Encoded, Env: env}, jit
}

// enqueue queues a job for the target's runners.
func (g *fakeGitHub) enqueue(spec fakegithub.JobSpec) int64 {
	spec.Repo = fakeRepo
	spec.Labels = []string{"self-hosted", "linux", jobLabel}
	return g.fake.EnqueueJob(spec)
}

// online reports whether the runner named name is online at the fake.
func (g *fakeGitHub) online(name string) bool {
	for _, r := range g.fake.Runners() {
		if r.Name == name {
			return r.Online
		}
	}
	return false
}

// newLauncher returns a launcher of the test image on host networking (the
// fake GitHub listens on loopback), removing what it left at the end.
func newLauncher(t testing.TB, s container.Settings, opts ...container.Option) (*container.Launcher, rm.HostID) {
	t.Helper()
	e := testEngine(t)
	if s.Image == "" {
		s.Image = runnerImage(t)
	}
	if s.Network == "" {
		s.Network = "host"
	}
	if s.Pull == "" {
		s.Pull = container.PullNever
	}
	host := rm.NewHostID()
	l, err := container.NewLauncher(e, host, s, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.RemoveLeftovers(ctx, host, func(rm.AttemptID) bool { return false })
		_ = l.Close()
	})
	return l, host
}
