package app_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// A monitor-only policy watches its target's jobs with the daemon running
// and starts no runner, however many wait; policy add says which of the
// two a policy arms, and status and policy show say it monitors.
func TestMonitorOnly(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	out := e.ok("policy", "add", "watch", "--repo", "octo/app", "--labels", "watch", "--monitor", "--runner-dir", runnerDir)
	assert.Contains(t, out, "it monitors only: watches repo:octo/app's jobs, their waits and GitHub's budget; starts no runner")
	out = e.ok("policy", "add", "serve", "--repo", "octo/app", "--scale-set", "serve", "--max", "3", "--spare", "0", "--runner-dir", runnerDir)
	assert.Contains(t, out, "it will start up to 3 runners at once for its jobs\n")
	assert.Regexp(t, `state:\s+monitor only`, e.ok("policy", "show", "watch"))
	assert.Regexp(t, `(?m)^watch .* monitor only$`, e.ok("policy", "list"))

	for range 2 {
		srv.EnqueueJob(fakegithub.JobSpec{Repo: "octo/app", Labels: []string{"watch"}, Duration: 50 * time.Millisecond})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "run"}, app.Streams{Stdout: &logs, Stderr: &logs})
	}()
	client := localapi.NewClient(e.dataDir)
	var watch struct {
		Monitor    bool   `json:"monitor"`
		Live       int    `json:"live"`
		Demand     int    `json:"demand"`
		Waiting    int    `json:"waiting"`
		WaitReason string `json:"wait_reason"`
	}
	require.Eventually(t, func() bool {
		st, err := client.Status(ctx)
		if err != nil {
			return false
		}
		for _, p := range st.Policies {
			if p.Name == "watch" {
				b, _ := json.Marshal(p)
				require.NoError(t, json.Unmarshal(b, &watch))
				return watch.Waiting == 2
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "the daemon sees the two jobs wait\n%s", logs.String())
	assert.True(t, watch.Monitor)
	assert.Equal(t, 0, watch.Live)
	assert.Equal(t, "monitor only: this host starts no runner for it", watch.WaitReason)
	assert.Regexp(t, regexp.MustCompile(`watch .*monitor only`), e.ok("status"))

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop on cancel")
	}
	assert.NotContains(t, e.ok("attempts"), "watch", "no runner was ever started for it")
	for _, j := range srv.Jobs() {
		assert.Equal(t, "queued", j.Status, "the jobs still wait")
	}
}
