package fakegithub_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
)

// BenchmarkGenerateJITConfig is the fake's JIT round trip through go-github
// (what the reconcile budgets exclude).
func BenchmarkGenerateJITConfig(b *testing.B) {
	s := fakegithub.NewServer(fakegithub.WithToken(token), fakegithub.WithRepo(repo))
	b.Cleanup(s.Close)
	c := restClient(b, s, token)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest(fmt.Sprintf("rm-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobRoundTrip is one job served end to end by an in-process fake
// runner: JIT config, connect, take the job, report it, exit.
func BenchmarkJobRoundTrip(b *testing.B) {
	s := fakegithub.NewServer(fakegithub.WithToken(token), fakegithub.WithRepo(repo), fakegithub.WithPollTimeout(time.Second))
	b.Cleanup(s.Close)
	c := restClient(b, s, token)
	ctx := context.Background()
	root := b.TempDir()
	for i := 0; b.Loop(); i++ {
		s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"x"}})
		jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest(fmt.Sprintf("rm-%d", i), "self-hosted", "x"))
		require.NoError(b, err)
		dir := fmt.Sprintf("%s/%d", root, i)
		require.NoError(b, os.Mkdir(dir, 0o755))
		if code := fakerunner.Run(ctx, fakerunner.Config{Root: dir, JITConfig: jit.GetEncodedJITConfig()}); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(s.CallsRunner())/float64(b.N), "runner-calls/job")
}
