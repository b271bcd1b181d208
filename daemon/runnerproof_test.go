package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

const newRelease = "2.331.0"

// managedWorld is a world whose runner is installed in the data directory
// (<data>/runners/<RunnerVersion>), as `runner install` leaves it, for a
// policy that names no runner directory (the runner the daemon updates),
// and the listener program the fake's new releases carry.
func managedWorld(t *testing.T) (world, string) {
	t.Helper()
	w := newWorld(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, fakegithub.LayoutRunnerDir(filepath.Join(w.dataDir, "runners", fakegithub.RunnerVersion), exe))
	// A release's package carries the fake runner program (built once,
	// without the race detector: a small package, quickly unpacked).
	built, err := fakegithub.BuildRunner()
	require.NoError(t, err)
	return w, filepath.Join(built, "bin", fakegithub.ListenerName())
}

func (w world) addManagedPolicy(t *testing.T, d *daemon.Daemon, name string) rm.Policy {
	t.Helper()
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", name)
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: name, Host: d.Host().ID, Target: target, Max: 2, MemoryEstimate: 64 << 20}
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))
	return p
}

func policyNote(d *daemon.Daemon, id rm.PolicyID) string {
	for _, ps := range d.Status().Policies {
		if ps.ID == id {
			return ps.LastError
		}
	}
	return ""
}

func exited7(as []rm.Attempt) int {
	n := 0
	for _, a := range as {
		if a.ExitCode != nil && *a.ExitCode == 7 {
			n++
		}
	}
	return n
}

func waitJobs(t *testing.T, w world) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	for _, j := range w.gh.Jobs() {
		assert.Equalf(t, 1, j.Starts, "job %s started once", j.Name)
		assert.Equalf(t, fakegithub.ResultSucceeded, j.Result, "job %s", j.Name)
	}
}

// GitHub refuses the installed runner (exit code 7): the daemon installs
// the newest release, the held policy's next attempt proves it, and once
// it listened every policy launches it; the job held at GitHub meanwhile
// is served, once, by the new runner (the old one is refused).
func TestRefusedRunnerIsUpdatedAndProven(t *testing.T) {
	w, exe := managedWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), AutoUpdateRunner: true, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addManagedPolicy(t, d, "upd")
	w.gh.SetRunnerReleaseProgram(exe)
	w.gh.SetLatestRunnerRelease(newRelease)
	warmRelease(t, w)
	w.gh.SetLatestRunnerRelease(fakegithub.RunnerVersion)
	start(t, d)
	require.Eventually(t, func() bool {
		rs := d.Status().Runner
		return rs != nil && rs.Latest == fakegithub.RunnerVersion
	}, 30*time.Second, 20*time.Millisecond, "the first look found nothing newer")

	w.gh.SetLatestRunnerRelease(newRelease)
	w.gh.MarkRunnerVersionDeprecated()
	refusedAt := time.Now()
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"upd"}, Name: "held", Duration: 100 * time.Millisecond})
	waitJobs(t, w)
	served := time.Since(refusedAt)
	t.Logf("job served %v after the refusal", served.Round(time.Millisecond))
	assert.Less(t, served, 30*time.Second)

	as := policyAttempts(t, d, p)
	assert.NotZero(t, exited7(as), "the old runner was refused first")
	rs := d.Status().Runner
	require.NotNil(t, rs)
	assert.Equal(t, newRelease, rs.Version, "every policy launches the proven runner")
	assert.Empty(t, rs.Trial)
	assert.Nil(t, rs.Bad)

	// The next job goes straight to the new runner: no refusal, no hold.
	before := exited7(policyAttempts(t, d, p))
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"upd"}, Name: "after", Duration: 100 * time.Millisecond})
	waitJobs(t, w)
	assert.Equal(t, before, exited7(policyAttempts(t, d, p)), "no attempt of the new runner was refused")
	assert.NotContains(t, policyNote(d, p.ID), "deprecated")
}

// An update whose checksum does not match is not installed: the refused
// runner cannot serve, so the policy holds with a note and status saying
// why, loses nothing (the job waits at GitHub), and serves as soon as a
// good release comes.
func TestBadUpdateKeepsPreviousAndSaysWhy(t *testing.T) {
	w, exe := managedWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), AutoUpdateRunner: true,
		RunnerUpdateRetry: time.Second, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addManagedPolicy(t, d, "bad")
	w.gh.SetRunnerReleaseProgram(exe)
	for _, v := range []string{"2.331.1", newRelease, fakegithub.RunnerVersion} {
		w.gh.SetLatestRunnerRelease(v)
		warmRelease(t, w)
	}
	start(t, d)
	require.Eventually(t, func() bool {
		rs := d.Status().Runner
		return rs != nil && rs.Latest == fakegithub.RunnerVersion
	}, 30*time.Second, 20*time.Millisecond, "the first look found nothing newer")

	w.gh.SetLatestRunnerRelease(newRelease)
	w.gh.BreakRunnerRelease(newRelease)
	w.gh.MarkRunnerVersionDeprecated()
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"bad"}, Name: "held", Duration: 100 * time.Millisecond})

	require.Eventually(t, func() bool {
		rs := d.Status().Runner
		return rs != nil && rs.Bad != nil
	}, 60*time.Second, 20*time.Millisecond)
	rs := d.Status().Runner
	assert.Equal(t, fakegithub.RunnerVersion, rs.Version, "the previous runner stays installed")
	assert.Equal(t, newRelease, rs.Bad.Version)
	assert.Contains(t, rs.Bad.Reason, "checksum")
	assert.Empty(t, rs.Trial)
	assert.NoDirExists(t, filepath.Join(w.dataDir, "runners", newRelease))
	require.Eventually(t, func() bool {
		return strings.Contains(policyNote(d, p.ID), "the update to runner "+newRelease+" failed")
	},
		30*time.Second, 20*time.Millisecond)
	held := len(policyAttempts(t, d, p))
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, "queued", j.Status, "the job waits at GitHub")
	}

	// A good release comes: it is proven and serves the held job.
	w.gh.SetLatestRunnerRelease("2.331.1")
	waitJobs(t, w)
	assert.Greater(t, len(policyAttempts(t, d, p)), held)
	assert.Equal(t, "2.331.1", d.Status().Runner.Version)
}

// A new runner that fails its proof (exits 1 before it listened) is marked
// bad: the previous runner stays the one policies launch.
func TestFailedProofKeepsPrevious(t *testing.T) {
	w, _ := managedWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), AutoUpdateRunner: true, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addManagedPolicy(t, d, "proof")
	// The release's listener is the package's stand-in, which exits 1.
	w.gh.SetLatestRunnerRelease(newRelease)
	start(t, d)
	require.Eventually(t, func() bool {
		rs := d.Status().Runner
		return rs != nil && rs.Trial == newRelease
	}, 30*time.Second, 20*time.Millisecond, "installed on trial at start")
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"proof"}, Name: "j", Duration: 100 * time.Millisecond})
	waitJobs(t, w)

	rs := d.Status().Runner
	require.NotNil(t, rs.Bad, "the proof failed")
	assert.Equal(t, newRelease, rs.Bad.Version)
	assert.Contains(t, rs.Bad.Reason, "before it listened")
	assert.Equal(t, fakegithub.RunnerVersion, rs.Version, "the previous runner serves on")
	failed := 0
	for _, a := range policyAttempts(t, d, p) {
		if a.State == rm.StateFailed {
			failed++
		}
	}
	assert.Equal(t, 1, failed, "one attempt paid for the proof")
}

// With auto_update off a refused runner holds its policy's launches with
// a note saying so, and nothing is installed.
func TestRefusedRunnerWithUpdatesOff(t *testing.T) {
	w, exe := managedWorld(t)
	w.gh.SetRunnerReleaseProgram(exe)
	w.gh.SetLatestRunnerRelease(newRelease)
	w.gh.MarkRunnerVersionDeprecated()
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addManagedPolicy(t, d, "off")
	start(t, d)
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"off"}, Name: "j", Duration: 100 * time.Millisecond})
	require.Eventually(t, func() bool { return strings.Contains(policyNote(d, p.ID), "auto_update = false") }, 30*time.Second, 20*time.Millisecond)
	rs := d.Status().Runner
	require.NotNil(t, rs)
	assert.False(t, rs.AutoUpdate)
	assert.Equal(t, fakegithub.RunnerVersion, rs.Version)
	assert.NoDirExists(t, filepath.Join(w.dataDir, "runners", newRelease))
	assert.Zero(t, w.gh.Calls(fakegithub.RouteLatestRunnerRelease), "no update looked for")
}

// Status shows the installed version's days left from GitHub's schedule,
// asked once per version (cached), not on every status read.
func TestRunnerScheduleInStatus(t *testing.T) {
	w, _ := managedWorld(t)
	ends := time.Now().Add(10*24*time.Hour + time.Hour)
	w.gh.SetDeprecationSchedule(fakegithub.RunnerVersion, time.Time{}, ends)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		Loop: reconcile.LoopOptions{}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	w.addManagedPolicy(t, d, "sched")
	start(t, d)
	require.Eventually(t, func() bool {
		rs := d.Status().Runner
		return rs != nil && rs.DaysLeft != nil
	}, 30*time.Second, 20*time.Millisecond)
	rs := d.Status().Runner
	assert.Equal(t, 10, *rs.DaysLeft)
	assert.Equal(t, "github", rs.ScheduleFrom)
	require.NotNil(t, rs.RuntimeEnds)
	assert.WithinDuration(t, ends, *rs.RuntimeEnds, time.Second)
	for range 50 {
		_ = d.Status()
	}
	assert.Equal(t, 1, w.gh.Calls(fakegithub.RouteRepoRunnerDeprecation), "one call per version")
}

func policyAttempts(t *testing.T, d *daemon.Daemon, p rm.Policy) []rm.Attempt {
	t.Helper()
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	return as
}

// warmRelease has the fake pack its latest release now (once per process,
// slow under the race detector), so a test's clock measures the manager,
// not the fake's packing.
func warmRelease(t *testing.T, w world) {
	t.Helper()
	c, err := github.New(w.github())
	require.NoError(t, err)
	_, _, err = c.LatestRunnerRelease(t.Context())
	require.NoError(t, err)
}
