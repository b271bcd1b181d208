//go:build linux

package reconcile_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/meter/fleetweights"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestE2EFleetWeightsDriveAnotherHostsAdmission: host A runs a policy's
// jobs, each allocating a known memory; their weights are recorded in the
// journal both hosts share. The policy moves to host B, which never ran a
// job of it and has no banked peak: its first pass expects A's peaks, not
// the policy's small estimate, and admits that many fewer runners.
func TestE2EFleetWeightsDriveAnotherHostsAdmission(t *testing.T) {
	const jobMem = 256 << 20
	a := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 4, estimate: 64 << 20})
	for range 3 {
		a.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: []string{"self-hosted", e2eSet}, Name: "build",
			Workflow: e2eRepo + "/.github/workflows/ci.yml@refs/heads/main", Duration: 300 * time.Millisecond,
			MemoryBytes: jobMem, CPUMillicores: 200})
	}
	cfgA := a.supervisorConfig(nil, nil)
	cfgA.Meters = fleetweights.Wrap(a.meters, a.st, a.host.ID, fleetweights.Options{Admit: true, Logger: a.log})
	_, stopA := a.run(cfgA)
	a.waitJobs(60 * time.Second)
	// A job concluded from its runner's own trace is weighed at once and
	// named when GitHub's word comes: wait for the names too.
	a.waitFor(30*time.Second, "host A's three jobs weighed and named", func() bool {
		js, err := a.st.HeaviestJobs(context.Background(), store.WeightFilter{Job: store.JobKey{Name: "build"}})
		return err == nil && len(js) == 1 && js[0].Count == 3
	})
	w, err := a.st.Weights(context.Background(), store.WeightFilter{Policy: a.policy.ID})
	require.NoError(t, err)
	require.Equal(t, 3, w.Count)
	stopA()
	a.settled(30 * time.Second)
	require.GreaterOrEqual(t, w.PeakRSSP90, uint64(jobMem), "the job's allocation was measured")
	jobs, err := a.st.HeaviestJobs(context.Background(), store.WeightFilter{})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "one job, three runs")
	assert.Equal(t, store.JobKey{Repository: e2eRepo, Workflow: e2eRepo + "/.github/workflows/ci.yml@refs/heads/main", Name: "build"}, jobs[0].Job)
	assert.Equal(t, 3, jobs[0].Count)

	// Host B: the same journal and GitHub, a data directory of its own.
	b := *a
	b.host = storetest.NewHost().Name("host-b").Build()
	b.dataDir = t.TempDir()
	b.meters = meter.New(filepath.Join(b.dataDir, "state", "memory-peaks.toml"))
	require.NoError(t, b.st.PutHost(context.Background(), b.host))
	moved := a.policy
	moved.Host = b.host.ID
	require.NoError(t, b.st.UpdatePolicy(context.Background(), moved))
	b.policy = moved

	// 1.5 GiB admits 23 runners of the 64 MiB estimate, capped at max 4;
	// of A's peak (≥ 256 MiB, with its 10 % headroom) at most 5.
	expected := w.PeakRSSP90 + w.PeakRSSP90/10
	total := uint64(3<<30) / 2
	adm := &reconcile.Admission{Memory: fakeMemory{total: total}}
	cfgB := b.supervisorConfig(nil, adm)
	cfgB.Meters = fleetweights.Wrap(b.meters, b.st, b.host.ID, fleetweights.Options{Admit: true, Logger: b.log})
	sup, _ := b.run(cfgB)
	var ps reconcile.PolicyStatus
	b.waitFor(10*time.Second, "host B's first pass", func() bool {
		st := sup.Status()
		if len(st.Policies) != 1 || st.Policies[0].ExpectedPeakBytes == 0 {
			return false
		}
		ps = st.Policies[0]
		return true
	})
	assert.Empty(t, b.meters.PeaksOf(moved.ID), "host B banked no peak of its own")
	assert.Equal(t, expected, ps.ExpectedPeakBytes, "host B expects host A's peaks")
	assert.Equal(t, min(4, int(total/expected)), ps.Admitted)

	// And it serves the policy's next job with that figure.
	b.enqueue(1, 100*time.Millisecond, 8<<20)
	b.waitJobs(60 * time.Second)
	b.settled(30 * time.Second)
}
