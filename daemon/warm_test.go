//go:build linux

package daemon_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// TestWarmJobs: a repository's jobs in turn find the workspace and caches
// the one before left (one slot, journaled on each attempt), their HOME is
// their own, and a job of a fork's pull request leaves nothing a later
// job reads.
func TestWarmJobs(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		Loop: reconcile.LoopOptions{ScaleDownAfter: -1}, Warm: daemon.Warm{Enabled: true}, JobReport: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "warm", false)
	p.Spare = 0
	require.NoError(t, d.Store().UpdatePolicy(t.Context(), p))
	stop := start(t, d)
	runs := 0
	run := func(spec fakegithub.JobSpec) fakegithub.JobRecord {
		t.Helper()
		runs++
		spec.Repo, spec.Labels, spec.Duration = repo, []string{"warm"}, 50*time.Millisecond
		id := w.gh.EnqueueJob(spec)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		require.NoError(t, w.gh.WaitJobsCompleted(ctx))
		rec, ok := w.gh.Job(id)
		require.True(t, ok)
		require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
		// The next job comes once this one's runner is gone, as in a
		// stream of one repository's pushes.
		require.Eventually(t, func() bool { return ended(t, d.Store(), p) == runs }, 30*time.Second, 20*time.Millisecond)
		waitSlotsFree(t, d)
		return rec
	}
	step := `echo "seen: $(cat kept 2>/dev/null) $(cat "$npm_config_cache/kept" 2>/dev/null) home: $(cat "$HOME/kept" 2>/dev/null)"
mkdir -p "$npm_config_cache"; echo "$GITHUB_JOB" >> kept; echo "$GITHUB_JOB" >> "$npm_config_cache/kept"; echo "$GITHUB_JOB" > "$HOME/kept"`
	first := run(fakegithub.JobSpec{Name: "one", Script: step})
	assert.Contains(t, first.Log, "seen:   home: \n", "the first job starts cold")
	second := run(fakegithub.JobSpec{Name: "two", Script: step})
	assert.Contains(t, second.Log, "seen: one one home: \n", "the second finds the first's workspace and cache, and a HOME of its own")
	assert.Contains(t, first.Log, "  workspace     cold: slot "+repo+"#1, new", "the job report says the first job started cold")
	assert.Regexp(t, `  workspace     warm: slot `+repo+`#1, [0-9.]+[KMG]i?B kept from earlier jobs`, second.Log, "and the second warm")
	fork := run(fakegithub.JobSpec{Name: "fork", Event: "pull_request", HeadRepo: "mallory/app", Script: step})
	assert.Contains(t, fork.Log, "seen: one\ntwo one\ntwo home: \n")
	after := run(fakegithub.JobSpec{Name: "after", Script: step})
	assert.NotContains(t, after.Log, "fork", "a fork's run wrote what a trusted run read")
	ws := d.Status().Warm
	require.NotNil(t, ws, "the status shows the slots")
	require.Len(t, ws.Repos, 1)
	assert.Equal(t, repo, ws.Repos[0].Repo)
	assert.Equal(t, 1, ws.Repos[0].Uses, "the fork's run emptied the slot: the run after made it anew")
	assert.Equal(t, ws.Bytes, ws.Repos[0].Bytes)
	require.NoError(t, stop())

	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	require.Len(t, as, 4)
	for _, a := range as {
		assert.Equal(t, rm.CompletedJob, a.Outcome.Kind)
		assert.Equal(t, repo+"#1", a.Slot, "the journal names each attempt's slot")
	}
	list, err := d.Slots().List()
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.True(t, list[0].HeldBy.IsZero(), "no slot stays held once its attempt ended")
	assert.Equal(t, 1, list[0].Uses, "the fork's run emptied the slot; one trusted job used it since")
}

// TestWarmSlotAcrossARestart: a daemon stopped mid-job leaves its runner
// running; the next one holds the runner's slot again (a new job of the
// repository gets another), and gives it back once the job ended.
func TestWarmSlotAcrossARestart(t *testing.T) {
	w := newWorld(t)
	newDaemon := func() *daemon.Daemon {
		d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
			Loop: reconcile.LoopOptions{ScaleDownAfter: -1}, Warm: daemon.Warm{Enabled: true}})
		require.NoError(t, err)
		return d
	}
	d := newDaemon()
	p := w.addPolicy(t, d, "warm", false)
	p.Spare = 0
	require.NoError(t, d.Store().UpdatePolicy(t.Context(), p))
	release := t.TempDir() + "/release"
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"warm"}, Name: "long",
		Script: "while [ ! -e '" + release + "' ]; do sleep 0.05; done"})
	stop := start(t, d)
	var held rm.Attempt
	require.Eventually(t, func() bool {
		live, err := d.Store().LiveAttempts(t.Context(), d.Host().ID)
		require.NoError(t, err)
		if len(live) != 1 || live[0].State != rm.StateBusy {
			return false
		}
		held = live[0]
		return true
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, repo+"#1", held.Slot)
	require.NoError(t, stop()) // no drain: the busy runner keeps its job
	require.NoError(t, d.Close())

	d = newDaemon()
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	stop = start(t, d)
	require.Eventually(t, func() bool {
		list, err := d.Slots().List()
		require.NoError(t, err)
		return len(list) == 1 && list[0].HeldBy == held.ID
	}, 30*time.Second, 20*time.Millisecond, "the re-adopted runner holds its slot again")
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"warm"}, Name: "short", Duration: 50 * time.Millisecond})
	require.Eventually(t, func() bool {
		live, err := d.Store().LiveAttempts(t.Context(), d.Host().ID)
		require.NoError(t, err)
		return len(live) == 2 && live[1].Slot != ""
	}, 30*time.Second, 20*time.Millisecond, "a runner for the new job is launched while the long one runs")
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 30*time.Second, 20*time.Millisecond)
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	slots := map[string]string{}
	for _, a := range as {
		slots[a.Job.Name] = a.Slot
	}
	assert.Equal(t, map[string]string{"long": repo + "#1", "short": repo + "#2"}, slots,
		"the job that came while the re-adopted runner ran got a slot of its own")
	require.Eventually(t, func() bool {
		list, err := d.Slots().List()
		require.NoError(t, err)
		for _, s := range list {
			if !s.HeldBy.IsZero() {
				return false
			}
		}
		return len(list) == 2
	}, 30*time.Second, 20*time.Millisecond, "no slot stays held after the restart")
	require.NoError(t, stop())
}

// TestWarmJobsKeepRepositoriesApart: a job of another repository, looking
// through every path the manager gives it (its workspace, HOME, the
// caches' variables, the tool cache), finds nothing the first
// repository's job left. (A native job that walks the file system is the
// manager's user and reaches every slot: docs/warm.md's threat model.)
func TestWarmJobsKeepRepositoriesApart(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		Loop: reconcile.LoopOptions{ScaleDownAfter: -1}, Warm: daemon.Warm{Enabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	w.addPolicy(t, d, "app", false)
	scope, err := rm.Repository("octo/other")
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", "other")
	require.NoError(t, err)
	require.NoError(t, d.Store().InsertPolicy(t.Context(), rm.Policy{ID: rm.NewPolicyID(), Name: "other", Host: d.Host().ID,
		Target: target, Max: 1, RunnerDir: w.runnerDir, MemoryEstimate: 64 << 20}))
	stop := start(t, d)
	run := func(spec fakegithub.JobSpec) fakegithub.JobRecord {
		t.Helper()
		spec.Duration = 50 * time.Millisecond
		id := w.gh.EnqueueJob(spec)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		require.NoError(t, w.gh.WaitJobsCompleted(ctx))
		rec, ok := w.gh.Job(id)
		require.True(t, ok)
		require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
		waitSlotsFree(t, d)
		return rec
	}
	plant := `for d in "$GITHUB_WORKSPACE" "$HOME" "$npm_config_cache" "$XDG_CACHE_HOME" "$GOMODCACHE" "$RUNNER_TOOL_CACHE"; do
mkdir -p "$d" && echo secret-of-app > "$d/planted"; done; echo planted`
	run(fakegithub.JobSpec{Repo: repo, Labels: []string{"app"}, Name: "plant", Script: plant})
	look := `n=$(grep -rls secret-of-app "$GITHUB_WORKSPACE" "$HOME" "$npm_config_cache" "$XDG_CACHE_HOME" "$GOMODCACHE" "$RUNNER_TOOL_CACHE" "$GITHUB_WORKSPACE/../.." 2>/dev/null | wc -l); echo "found: $n"`
	other := run(fakegithub.JobSpec{Repo: "octo/other", Labels: []string{"other"}, Name: "look", Script: look})
	assert.Contains(t, other.Log, "found: 0\n")
	again := run(fakegithub.JobSpec{Repo: repo, Labels: []string{"app"}, Name: "look", Script: look})
	assert.NotContains(t, again.Log, "found: 0\n", "the repository's own next job finds what it left (the test can fail)")
	require.NoError(t, stop())
}

// waitSlotsFree waits until no attempt holds a slot of d's: the last
// job's attempt ended and gave its slot back.
func waitSlotsFree(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	require.Eventually(t, func() bool {
		list, err := d.Slots().List()
		require.NoError(t, err)
		for _, s := range list {
			if !s.HeldBy.IsZero() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
}

// TestWarmSpares: a warm spare leases its repository's slot at launch, so
// the job it takes runs in one; once every slot served a job, each job
// finds one warm.
func TestWarmSpares(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		Loop: reconcile.LoopOptions{ScaleDownAfter: -1}, Warm: daemon.Warm{Enabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "warm", false)
	p.Spare, p.Max = 1, 1
	require.NoError(t, d.Store().UpdatePolicy(t.Context(), p))
	stop := start(t, d)
	step := `echo "seen: $(cat kept 2>/dev/null | wc -l)"; echo "$GITHUB_JOB" >> kept`
	var logs []string
	for i := range 5 {
		id := w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"warm"}, Name: fmt.Sprintf("job-%d", i),
			Duration: 50 * time.Millisecond, Script: step})
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		require.NoError(t, w.gh.WaitJobsCompleted(ctx))
		cancel()
		rec, _ := w.gh.Job(id)
		require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
		logs = append(logs, rec.Log)
		require.Eventually(t, func() bool { return ended(t, d.Store(), p) >= i+1 }, 30*time.Second, 20*time.Millisecond)
	}
	require.NoError(t, stop())
	assert.Contains(t, logs[4], "seen: ", logs[4])
	assert.NotContains(t, logs[4], "seen: 0\n", "by the fifth job every slot the policy uses served one")
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	jobs := 0
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			jobs++
			assert.Regexp(t, `^`+repo+`#[12]$`, a.Slot, "a job taken by a spare runs in its repository's slot")
		}
	}
	assert.Equal(t, 5, jobs)
}
