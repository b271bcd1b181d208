package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// The daemon's default meters record every job's weight in the journal,
// for `runner-manager weights` and, with a shared store, the fleet.
func TestRunRecordsJobWeights(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), SampleEvery: 20 * time.Millisecond,
		NoLocalAPI: true, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", true)
	start(t, d)
	for range 2 {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "home"}, Name: "build",
			Workflow: "ci", Duration: 300 * time.Millisecond, MemoryBytes: 16 << 20})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))

	fleet, ok := d.Store().(store.Fleet)
	require.True(t, ok, "the journal keeps job weights")
	var jobs []store.JobWeights
	require.Eventually(t, func() bool {
		jobs, err = fleet.HeaviestJobs(t.Context(), store.WeightFilter{Policy: p.ID, Job: store.JobKey{Name: "build"}})
		return err == nil && len(jobs) == 1 && jobs[0].Count == 2
	}, 20*time.Second, 20*time.Millisecond, "both jobs weighed, under their name (GitHub's word may name a job after its runner's conclusion)")
	assert.Equal(t, store.JobKey{Repository: repo, Workflow: "ci", Name: "build"}, jobs[0].Job)
	assert.Greater(t, jobs[0].PeakRSSP90, uint64(16<<20))
}
