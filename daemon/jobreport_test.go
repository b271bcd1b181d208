//go:build linux

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// reportDaemon is a daemon of w sampling every 100 ms, with the job
// report as on says, the loop's runner environment env.
func reportDaemon(t *testing.T, w world, on bool, env ...string) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		JobReport: on, SampleEvery: 100 * time.Millisecond, HostName: "build-1",
		Loop: reconcile.LoopOptions{ScaleDownAfter: -1}, RunnerEnv: env})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// runOne runs one job of spec on a scale-set policy "hooked" of d and
// returns its record, with the policy.
func runOne(t *testing.T, w world, d *daemon.Daemon, spec fakegithub.JobSpec) (fakegithub.JobRecord, rm.Policy) {
	t.Helper()
	p := w.addPolicy(t, d, "hooked", false)
	spec.Repo, spec.Labels = repo, []string{"hooked"}
	id := w.gh.EnqueueJob(spec)
	stop := start(t, d)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 1 }, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
	rec, ok := w.gh.Job(id)
	require.True(t, ok)
	return rec, p
}

// footprint reads the report's figures out of a job's log.
type footprint struct {
	peakMiB, avgCores, busiestCores float64
	duration                        time.Duration
}

var (
	rePeak     = regexp.MustCompile(`(?m)^  peak memory   ([0-9.]+)(MiB|GiB)$`)
	reCPU      = regexp.MustCompile(`(?m)^  CPU           ([0-9.]+) cores on average, ([0-9.]+) cores at its busiest$`)
	reDuration = regexp.MustCompile(`(?m)^  duration      ([0-9]+)m([0-9]{2})s$`)
)

func readFootprint(t *testing.T, log string) footprint {
	t.Helper()
	var f footprint
	m := rePeak.FindStringSubmatch(log)
	require.NotNil(t, m, log)
	f.peakMiB, _ = strconv.ParseFloat(m[1], 64)
	if m[2] == "GiB" {
		f.peakMiB *= 1024
	}
	m = reCPU.FindStringSubmatch(log)
	require.NotNil(t, m, log)
	f.avgCores, _ = strconv.ParseFloat(m[1], 64)
	f.busiestCores, _ = strconv.ParseFloat(m[2], 64)
	m = reDuration.FindStringSubmatch(log)
	require.NotNil(t, m, log)
	mins, _ := strconv.Atoi(m[1])
	secs, _ := strconv.Atoi(m[2])
	f.duration = time.Duration(mins)*time.Minute + time.Duration(secs)*time.Second
	return f
}

func theAttempt(t *testing.T, st store.Store, p rm.Policy) rm.Attempt {
	t.Helper()
	as, err := st.Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	require.Len(t, as, 1)
	return as[0]
}

// TestJobReport: a job that holds 64 MiB and burns half a core for 3 s
// shows, in its log and its step summary, a peak of at least 64 MiB, its
// CPU, its duration and the policy and host that ran it, with no change
// to the job; the journal keeps GitHub's name of the job, not the hook's.
func TestJobReport(t *testing.T) {
	w := newWorld(t)
	d := reportDaemon(t, w, true)
	rec, p := runOne(t, w, d, fakegithub.JobSpec{Name: "Build (linux)", Key: "build",
		Duration: 3 * time.Second, MemoryBytes: 64 << 20, CPUMillicores: 500})
	assert.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
	assert.Contains(t, rec.Log, "runner-manager: what this job used, as the manager metered it\n")
	f := readFootprint(t, rec.Log)
	assert.GreaterOrEqual(t, f.peakMiB, 64.0, "the job touched 64 MiB")
	assert.Less(t, f.peakMiB, 1024.0)
	assert.Greater(t, f.avgCores, 0.1, "it burned half a core")
	assert.Less(t, f.avgCores, 2.0, "two cores at most on this machine")
	assert.GreaterOrEqual(t, f.busiestCores, f.avgCores)
	assert.GreaterOrEqual(t, f.duration, 2*time.Second, "the job worked 3 s (whole seconds, from the hooks' clocks)")
	assert.Less(t, f.duration, 60*time.Second)
	assert.Contains(t, rec.Log, "  ran on        host build-1, policy hooked (native, attempt ")
	assert.Regexp(t, `(?m)^  measured      the job, from its (cgroup|process tree): [0-9]+ samples, the last [0-9]+ s ago$`, rec.Log)
	assert.Contains(t, rec.StepSummary, "### Runner footprint\n")
	assert.Contains(t, rec.StepSummary, "| Host | build-1 |\n")
	assert.Contains(t, rec.StepSummary, "| Policy | hooked (native) |\n")

	a := theAttempt(t, d.Store(), p)
	assert.Equal(t, rm.CompletedJob, a.Outcome.Kind)
	assert.Contains(t, rec.Log, "attempt "+a.ID.String()+")")
	assert.GreaterOrEqual(t, a.Usage.PeakRSSBytes, uint64(64<<20), "the journal's figures are the same meters'")
	require.Eventually(t, func() bool { return theAttempt(t, d.Store(), p).Job.Known() }, 30*time.Second, 50*time.Millisecond,
		"GitHub names the job")
	a = theAttempt(t, d.Store(), p)
	assert.Equal(t, "Build (linux)", a.Job.Name, "GitHub's name, never the hook's (%q)", "build")
	assert.Equal(t, rec.Workflow, a.Job.Workflow)
}

// TestJobReportChainsUserHooks: hooks the runner's environment already
// names run too, with their effect, and a user hook that fails fails the
// job, as it does without the manager's report.
func TestJobReportChainsUserHooks(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started.sh")
	require.NoError(t, os.WriteFile(started, []byte("echo \"user started hook for $GITHUB_JOB\"\necho FROM_USER=kept >>\"$GITHUB_ENV\"\n"), 0o700))
	completed := filepath.Join(dir, "completed.sh")
	require.NoError(t, os.WriteFile(completed, []byte("echo \"user completed hook, FROM_USER=$FROM_USER\"\nexit 4\n"), 0o700))
	env := []string{"ACTIONS_RUNNER_HOOK_JOB_STARTED=" + started, "ACTIONS_RUNNER_HOOK_JOB_COMPLETED=" + completed}
	spec := fakegithub.JobSpec{Name: "build", Duration: 300 * time.Millisecond, MemoryBytes: 8 << 20, Script: `echo "step sees FROM_USER=$FROM_USER"`}

	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "Off", true: "On"}[on], func(t *testing.T) {
			w := newWorld(t)
			rec, _ := runOne(t, w, reportDaemon(t, w, on, env...), spec)
			assert.Equal(t, fakegithub.ResultFailed, rec.Result, "the user's completed hook fails the job: %s", rec.Log)
			assert.Contains(t, rec.Log, "user started hook for build\n")
			assert.Contains(t, rec.Log, "step sees FROM_USER=kept\n", "the user's hook keeps its effect")
			assert.Contains(t, rec.Log, "user completed hook, FROM_USER=kept\n")
			assert.Contains(t, rec.Log, "##[error]Process completed with exit code 4.")
			assert.Equal(t, on, strings.Contains(rec.Log, "runner-manager: what this job used"), rec.Log)
			if on {
				assert.Less(t, strings.Index(rec.Log, "runner-manager: what this job used"), strings.Index(rec.Log, "user completed hook"),
					"the manager's part first, then the user's")
			}
		})
	}
}

// TestJobReportOff: with the setting off no hook is written: the job's
// log has no hook step.
func TestJobReportOff(t *testing.T) {
	w := newWorld(t)
	rec, _ := runOne(t, w, reportDaemon(t, w, false), fakegithub.JobSpec{Name: "build", Duration: 200 * time.Millisecond, Script: "echo the step ran"})
	assert.Equal(t, fakegithub.ResultSucceeded, rec.Result)
	assert.Contains(t, rec.Log, "the step ran\n")
	assert.NotContains(t, rec.Log, "Set up runner", "no started hook")
	assert.NotContains(t, rec.Log, "Complete runner", "no completed hook")
	assert.NotContains(t, rec.Log, "runner-manager")
	assert.Empty(t, rec.StepSummary)
}

// TestJobReportNamesTheJob: where GitHub named no job (an embedder's
// demand source tells only how many runners it wants), the journal names
// the attempt's job from what the started hook saw.
func TestJobReportNamesTheJob(t *testing.T) {
	w := newWorld(t)
	q := newQueue()
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t), JobReport: true,
		SampleEvery: 100 * time.Millisecond, Loop: reconcile.LoopOptions{ScaleDownAfter: -1},
		Targets: func(context.Context, rm.Policy) (rm.Registrar, rm.DemandSource, error) { return nil, q, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "queued", true)
	id := w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "queued"}, Name: "From the queue", Key: "from-queue",
		Duration: 200 * time.Millisecond, MemoryBytes: 8 << 20})
	stop := start(t, d)
	q.set(1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	q.set(0)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 1 }, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
	rec, _ := w.gh.Job(id)
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	var served rm.Attempt
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			served = a
		}
	}
	require.False(t, served.ID.IsZero(), "an attempt ran the job")
	assert.False(t, served.Job.Known(), "GitHub gave no id: none is made up")
	assert.Equal(t, rm.Job{Workflow: rec.Workflow, Name: "from-queue", RunID: rec.RunID}, served.Job,
		"the workflow ref (which names the repository), the job's id in its workflow, the run, as the hook saw them")
}
