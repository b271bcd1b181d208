package fakegithub_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// The fake runner takes the boot delay its JIT configuration carries
// before it connects, as the real listener takes seconds to start; the
// test servers' default is none. The configuration the runner wrote into
// its root carries the server's delay; that the listener waits it out is
// TestBootWaitsTheDelay's (fakerunner, in virtual time); the time taken
// here is only logged.
func TestRunnerBootDelay(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	for _, tc := range []struct {
		name    string
		opts    []fakegithub.Option
		delayMS int64
	}{
		{"TestServerDefault", nil, 0},
		{"Delayed", []fakegithub.Option{fakegithub.WithRunnerBootDelay(1500 * time.Millisecond)}, 1500},
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
			root := runnerRoot(t, install)
			p := startRunner(t, root, jit.GetEncodedJITConfig())
			require.Eventually(t, func() bool { return strings.Contains(p.out.String(), "Listening for Jobs") },
				30*time.Second, 10*time.Millisecond)
			took := time.Since(began)
			t.Logf("%s: listening %s after the start", tc.name, took.Round(time.Millisecond))
			b, err := os.ReadFile(filepath.Join(root, ".runner"))
			require.NoError(t, err)
			var runner struct {
				FakeBootDelayMS int64 `json:"fakeBootDelayMs"`
			}
			require.NoError(t, json.Unmarshal(b, &runner))
			assert.Equal(t, tc.delayMS, runner.FakeBootDelayMS, "the delay the runner read")
		})
	}
}
