//go:build linux

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/platform/vm"
	"github.com/runner-manager/runner-manager/platform/vm/vmtest"
	"github.com/runner-manager/runner-manager/reconcile/daemon"
)

// TestVME2EJobs: 10 jobs through the daemon at max 2, each in a microVM
// of its own booted from the policy's image (QEMU's software CPU, as
// these machines cannot nest KVM): every job completed once, by its own
// runner, never more than 2 at once, each attempt metered from QEMU's
// process, and nothing left (no VM directory, no registration).
func TestVME2EJobs(t *testing.T) {
	const jobs, most = 10, 2
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(),
		VM:          daemon.VMConfig{Accel: vm.AccelTCG, MemoryMiB: 256, CPUs: 1},
		SampleEvery: 200 * time.Millisecond, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", "vm")
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: "vm", Host: d.Host().ID, Target: target, Max: most,
		MemoryEstimate: 300 << 20, Backend: rm.BackendVM, VM: rm.VMSettings{Image: im.Dir}}
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))

	stop := start(t, d)
	began := time.Now()
	for range jobs {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 200 * time.Millisecond, MemoryBytes: 32 << 20})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	took := time.Since(began)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == jobs }, time.Minute, 100*time.Millisecond)
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 }, time.Minute, 100*time.Millisecond,
		"every attempt's VM directory (its overlay) is removed")
	require.NoError(t, stop())

	runners := map[string]bool{}
	var waits []time.Duration
	type span struct{ from, to time.Time }
	var spans []span
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, "completed", j.Status)
		assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
		runners[j.RunnerName] = true
		waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
		spans = append(spans, span{j.StartedAt, j.CompletedAt})
	}
	assert.Len(t, runners, jobs, "one ephemeral runner per job")
	peak := 0
	for _, s := range spans {
		at := 0
		for _, o := range spans {
			if !o.from.After(s.from) && o.to.After(s.from) {
				at++
			}
		}
		peak = max(peak, at)
	}
	assert.LessOrEqual(t, peak, most, "never more jobs at once than the policy's max")
	metered := 0
	for _, a := range attemptsOf(t, d.Store(), p) {
		if a.Outcome.Kind == rm.CompletedJob && a.PID != 0 && a.Usage.PeakRSSBytes > 0 {
			metered++
		}
	}
	assert.NotZero(t, metered, "attempts are metered from QEMU's process")
	assert.Empty(t, w.gh.Runners(), "no registration left")
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	t.Logf("%d jobs at max %d in VMs (TCG): %v; queue→start p50 %v, max %v; %d of %d attempts metered",
		jobs, most, took.Round(time.Millisecond), waits[len(waits)/2].Round(time.Millisecond),
		slices.Max(waits).Round(time.Millisecond), metered, jobs)
}

// vmDirs are the attempt directories left under the data directory's vm/
// (kept failed logs in .failed are not attempts).
func vmDirs(t *testing.T, dataDir string) []string {
	ents, err := os.ReadDir(filepath.Join(dataDir, "vm"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] != '.' {
			out = append(out, e.Name())
		}
	}
	return out
}
