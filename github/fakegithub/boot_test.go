package fakegithub_test

import (
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/github/githubtest"
)

// The fake runner takes the boot delay its JIT configuration carries
// before it connects, as the real listener takes seconds to start; the
// test servers' default is none.
func TestRunnerBootDelay(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	for _, tc := range []struct {
		name     string
		opts     []fakegithub.Option
		min, max time.Duration
	}{
		{"TestServerDefault", nil, 0, 1500 * time.Millisecond},
		{"Delayed", []fakegithub.Option{fakegithub.WithRunnerBootDelay(1500 * time.Millisecond)}, 1500 * time.Millisecond, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.opts...)
			c := restClient(t, s, token)
			ctx := ctxT(t, 60*time.Second)
			owner, name, _ := strings.Cut(repo, "/")
			jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, &gh.GenerateJITConfigRequest{
				Name: "rm-boot", RunnerGroupID: 1, Labels: []string{"self-hosted", "linux", "x64"},
			})
			require.NoError(t, err)
			began := time.Now()
			p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
			require.Eventually(t, func() bool { return strings.Contains(p.out.String(), "Listening for Jobs") },
				30*time.Second, 10*time.Millisecond)
			took := time.Since(began)
			t.Logf("%s: listening %s after the start", tc.name, took.Round(time.Millisecond))
			assert.GreaterOrEqual(t, took, tc.min)
			assert.Less(t, took, tc.max)
		})
	}
}
