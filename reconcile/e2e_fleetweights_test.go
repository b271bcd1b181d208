//go:build linux

package reconcile_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/meter/fleetweights"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleetStore is a store two hosts share, with the fleet's tables.
type fleetStore interface {
	store.Store
	store.Fleet
}

// TestE2EFleetWeightsDriveAnotherHostsAdmission: host A runs a policy's
// jobs, each allocating a known memory; their weights are recorded in the
// store both hosts share. The policy moves to host B, which never ran a
// job of it and has no banked peak: its first pass expects A's peaks, not
// the policy's small estimate, and admits that many fewer runners.
func TestE2EFleetWeightsDriveAnotherHostsAdmission(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		fleetWeightsE2E(t, func(w *world) fleetStore { return w.st })
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		srv := pgtest.New(t)
		fleetWeightsE2E(t, func(w *world) fleetStore {
			st, err := postgres.Open(context.Background(), srv.URL(srv.CreateDatabase(t)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			require.NoError(t, st.PutHost(context.Background(), w.host))
			require.NoError(t, st.InsertPolicy(context.Background(), w.policy))
			return st
		})
	})
}

// fleetWeightsE2E runs the test over the store shared returns for host
// A's world (its own journal, or one it seeds).
func fleetWeightsE2E(t *testing.T, shared func(*world) fleetStore) {
	const jobMem = 256 << 20
	const workflow = e2eRepo + "/.github/workflows/ci.yml@refs/heads/main"
	ctx := context.Background()
	a := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 4, estimate: 64 << 20})
	st := shared(a)
	for range 3 {
		a.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: []string{"self-hosted", e2eSet}, Name: "build",
			Workflow: workflow, Duration: 300 * time.Millisecond, MemoryBytes: jobMem, CPUMillicores: 200})
	}
	cfgA := a.supervisorConfig(nil, nil)
	cfgA.Store = st
	cfgA.Meters = fleetweights.Wrap(a.meters, st, a.host.ID, fleetweights.Options{Admit: true, Logger: a.log})
	_, stopA := a.run(cfgA)
	a.waitJobs(60 * time.Second)
	// A job concluded from its runner's own trace is weighed at once and
	// named when GitHub's word comes: wait for the names too.
	a.waitFor(30*time.Second, "host A's three jobs weighed and named", func() bool {
		js, err := st.HeaviestJobs(ctx, store.WeightFilter{Job: store.JobKey{Name: "build"}})
		return err == nil && len(js) == 1 && js[0].Count == 3
	})
	a.waitFor(30*time.Second, "host A's attempts concluded", func() bool {
		live, err := st.LiveAttempts(ctx, a.host.ID)
		return err == nil && len(live) == 0
	})
	stopA()
	w, err := st.Weights(ctx, store.WeightFilter{Policy: a.policy.ID})
	require.NoError(t, err)
	require.Equal(t, 3, w.Count)
	// The samples see most of the allocation (the last pages may come
	// between two of them).
	require.Greater(t, w.PeakRSSP90, uint64(jobMem)*3/4, "the job's allocation was measured")
	jobs, err := st.HeaviestJobs(ctx, store.WeightFilter{})
	require.NoError(t, err)
	require.Len(t, jobs, 1, "one job, three runs")
	assert.Equal(t, store.JobKey{Repository: e2eRepo, Workflow: workflow, Name: "build"}, jobs[0].Job)

	// Host B: the same store and GitHub, a data directory of its own.
	b := *a
	b.host = storetest.NewHost().Name("host-b").Build()
	b.dataDir = t.TempDir()
	b.meters = meter.New(filepath.Join(b.dataDir, "state", "memory-peaks.toml"))
	require.NoError(t, st.PutHost(ctx, b.host))
	moved := a.policy
	moved.Host = b.host.ID
	require.NoError(t, st.UpdatePolicy(ctx, moved))
	b.policy = moved

	// 768 MiB admits 12 runners of the 64 MiB estimate, capped at max 4;
	// of A's peak (about 256 MiB, with its 10 % headroom) 2.
	expected := w.PeakRSSP90 + w.PeakRSSP90/10
	total := uint64(768 << 20)
	cfgB := b.supervisorConfig(nil, &reconcile.Admission{Memory: fakeMemory{total: total}})
	cfgB.Store = st
	cfgB.Meters = fleetweights.Wrap(b.meters, st, b.host.ID, fleetweights.Options{Admit: true, Logger: b.log})
	sup, _ := b.run(cfgB)
	var ps status.Policy
	b.waitFor(10*time.Second, "host B's first pass", func() bool {
		s := sup.Status()
		if len(s.Policies) != 1 || s.Policies[0].ExpectedPeakBytes == 0 {
			return false
		}
		ps = s.Policies[0]
		return true
	})
	assert.Empty(t, b.meters.PeaksOf(moved.ID), "host B banked no peak of its own")
	assert.Equal(t, expected, ps.ExpectedPeakBytes, "host B expects host A's peaks")
	assert.Equal(t, int(total/expected), ps.Admitted)
	assert.Less(t, ps.Admitted, 4, "fewer than the estimate would admit")

	// And it serves the policy's next job, as host B.
	b.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: []string{"self-hosted", e2eSet}, Name: "build",
		Workflow: workflow, Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
	b.waitJobs(60 * time.Second)
	b.waitFor(30*time.Second, "host B's job weighed", func() bool {
		w, err := st.Weights(ctx, store.WeightFilter{Policy: moved.ID})
		return err == nil && w.Count == 4
	})
	as, err := st.Attempts(ctx, store.AttemptFilter{Policy: moved.ID})
	require.NoError(t, err)
	byHost := map[bool]int{}
	for _, at := range as {
		if at.Outcome.Kind == rm.CompletedJob {
			byHost[strings.HasPrefix(at.RunnerName, rm.RunnerNamePrefix(b.host.ID))]++
		}
	}
	assert.Equal(t, map[bool]int{false: 3, true: 1}, byHost, "three jobs on host A, one on host B")
}
