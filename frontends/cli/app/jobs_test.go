package app_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// TestJobs: `jobs` lists the running jobs with their attempts, the waiting
// ones with their policy and why they wait, and says how many more GitHub
// counts without naming them; `status` counts them.
func TestJobs(t *testing.T) {
	e := newEnv(t)
	pid, att := rm.NewPolicyID(), rm.NewAttemptID()
	now := time.Now().UTC()
	target := "repo octo/app, scale set home"
	serveDaemon(t, e.dataDir, &fixedDaemon{refreshed: make(chan struct{}, 1), st: status.Status{
		At:   now,
		Host: rm.Host{ID: rm.NewHostID(), Name: "box", CPUs: 8, OS: "linux", Arch: "amd64"},
		Policies: []status.Policy{{ID: pid, Name: "home", Target: target, Mode: "scale-set", Live: 2, Busy: 2, Max: 2,
			Wait: status.Wait{Queued: 5, Waiting: 5, WaitReason: "at max 2"}}},
		Jobs: []status.Job{
			{ID: "a", Name: "build", Repository: "octo/app", Workflow: "ci.yml", State: status.JobRunning, Policy: pid, PolicyName: "home",
				StartedAt: now.Add(-90 * time.Second), Attempt: att, RunnerName: "rm-box-1"},
			{ID: "b", Name: "test", Repository: "octo/app", State: status.JobQueued, Policy: pid, PolicyName: "home",
				QueuedAt: now.Add(-2 * time.Minute), WaitReason: "at max 2"},
			{ID: "c", Name: "gpu", Repository: "octo/app", Labels: []string{"self-hosted", "gpu"}, State: status.JobUnmatched,
				WaitReason: "no policy here matches [self-hosted, gpu]"},
		},
	}})

	out := e.ok("jobs")
	for _, want := range []string{"running: 1", "build (octo/app)", "ci.yml", att.String(), "rm-box-1", "1m30s",
		"waiting: 2 named", "test (octo/app)", "queued", "2m0s", "at max 2",
		"gpu (octo/app)", "unmatched", "no policy here matches [self-hosted, gpu]",
		target + ": 4 more waiting that GitHub counts without naming them (policy home)"} {
		assert.Contains(t, out, want)
	}

	var got struct {
		Daemon bool                 `json:"daemon"`
		Jobs   []status.Job         `json:"jobs"`
		Waits  []status.TargetWaits `json:"waits"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("jobs", "--json")), &got))
	assert.True(t, got.Daemon)
	assert.Len(t, got.Jobs, 3)
	assert.Equal(t, []status.TargetWaits{{Target: target, Policy: "home", Waiting: 5, Named: 1}}, got.Waits)

	assert.Contains(t, e.ok("status"), "jobs:     2 running, 6 waiting (`runner-manager jobs` lists them)")
}

// TestJobsWithoutDaemon: with no daemon, the journal's running jobs only,
// and it says so.
func TestJobsWithoutDaemon(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--offline")
	r := e.run("jobs")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout+r.stderr, "daemon: not running")
	assert.Contains(t, r.stdout, "no jobs running or waiting")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("jobs", "--json")), &got))
	assert.Equal(t, false, got["daemon"])
	assert.Equal(t, []any{}, got["jobs"])
	assert.Equal(t, []any{}, got["waits"])
}
