//go:build linux

package reconcile_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// childEnv carries the manager child's world from its parent test.
const childEnv = "RUNNER_MANAGER_E2E_CHILD"

type childWorld struct {
	URL, APIURL, DataDir string
	Host                 rm.HostID
	Policy               rm.PolicyID
}

// childWorldOf is the world a manager child runs in, from the parent
// test's env variable (skipping when it is not set: not a child): the
// parent's fake GitHub, journal, host and policy.
func childWorldOf(t *testing.T, env, parent string) *world {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		t.Skip("the manager child of " + parent)
	}
	var cw childWorld
	require.NoError(t, json.Unmarshal([]byte(raw), &cw))
	w := &world{t: t, mode: rm.ModeScaleSet, dataDir: cw.DataDir, logs: &syncBuffer{}}
	w.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := github.New(github.Config{WebURL: cw.URL, APIURL: cw.APIURL, Token: e2eToken, Logger: w.log})
	require.NoError(t, err)
	w.client = c
	w.openJournal()
	w.host, err = w.st.Host(t.Context(), cw.Host)
	require.NoError(t, err)
	w.policy, err = w.st.Policy(t.Context(), cw.Policy)
	require.NoError(t, err)
	return w
}

// TestE2EChildSupervisor is the manager run in a child process by
// TestE2EKilledManager, which kills it with SIGKILL.
func TestE2EChildSupervisor(t *testing.T) {
	w := childWorldOf(t, childEnv, "TestE2EKilledManager")
	w.meters = meter.New(filepath.Join(w.dataDir, "state", "memory-peaks.toml"))
	sup, err := reconcile.NewSupervisor(w.supervisorConfig(nil, nil))
	require.NoError(t, err)
	_ = sup.Run(context.Background()) // until killed
}

func TestE2EKilledManager(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 4})
	const jobs = 24
	w.enqueue(jobs, 600*time.Millisecond, 8<<20)

	raw, err := json.Marshal(childWorld{URL: w.fake.URL(), APIURL: w.fake.APIURL(), DataDir: w.dataDir, Host: w.host.ID, Policy: w.policy.ID})
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^TestE2EChildSupervisor$", "-test.count=1")
	child.Env = append(os.Environ(), childEnv+"="+string(raw))
	var out syncBuffer
	child.Stdout, child.Stderr = &out, &out
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			t.Logf("killed manager's log:\n%s", tail(out.String(), 100))
		}
	})

	// Kill it mid-run: some jobs done, runners busy with others.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.fake.WaitFor(ctx, func() bool {
		done, running := 0, 0
		for _, j := range w.fake.Jobs() {
			switch j.Status {
			case "completed":
				done++
			case "in_progress":
				running++
			}
		}
		return done >= 6 && running >= 2
	}), "the child manager makes progress")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	// What was running at the kill is what the journal holds live: a
	// runner may end between the kill and a look at the process table,
	// and its job is then as unknown to the journal as a live one's.
	liveAtKill := 0
	for _, a := range w.attempts() {
		if !a.State.Ended() {
			liveAtKill++
		}
	}
	t.Logf("manager killed with %d attempts live in the journal, %d runner processes alive", liveAtKill, countRunnerProcesses(w.dataDir))

	// Restart (in this process): the same journal and data directory.
	w.run(w.supervisorConfig(nil, nil))
	w.waitJobs(90 * time.Second)
	w.settled(30 * time.Second)

	runners := map[string]bool{}
	for _, j := range w.fake.Jobs() {
		assert.Equal(t, "completed", j.Status)
		assert.Equal(t, "succeeded", j.Result, "job %d", j.ID)
		assert.Equal(t, 1, j.Starts, "job %d ran exactly once", j.ID)
		assert.False(t, runners[j.RunnerName], "runner %s ran two jobs", j.RunnerName)
		runners[j.RunnerName] = true
	}
	completed := map[string]bool{}
	outcomes := map[string]int{}
	for _, a := range w.attempts() {
		outcomes[a.Outcome.String()]++
		if a.Outcome.Kind == rm.CompletedJob && a.Job.Known() {
			assert.False(t, completed[a.Job.ID], "job %s concluded twice", a.Job.ID)
			completed[a.Job.ID] = true
		}
	}
	t.Logf("outcomes: %v", outcomes)
	assert.GreaterOrEqual(t, len(completed), jobs-liveAtKill, "every job's attempt concluded CompletedJob, but perhaps those running at the kill")
	if liveAtKill > 0 {
		assert.True(t, strings.Contains(w.logs.String(), "re-adopted runner process") ||
			strings.Contains(w.logs.String(), "runner ended while the manager was down"),
			"the runners alive at the kill were looked for")
	}
	var live []rm.Attempt
	live, err = w.st.Attempts(context.Background(), store.AttemptFilter{Policy: w.policy.ID,
		States: []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy}})
	require.NoError(t, err)
	assert.Empty(t, live)
}
