package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// RunFleet is the conformance suite of store.Fleet: every implementation
// passes it. open returns a new, empty store for one subtest and arranges
// for it to be closed when the subtest ends. Subtests run in parallel.
func RunFleet(t *testing.T, open func(t *testing.T) store.Fleet) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f store.Fleet)
	}{
		{"RegisterHost", testRegisterHost},
		{"RegisterHostInvalid", testRegisterHostInvalid},
		{"Heartbeat", testHeartbeat},
		{"Weights", testWeights},
		{"WeightsFilter", testWeightsFilter},
		{"WeightInvalid", testWeightInvalid},
		{"HeaviestJobs", testHeaviestJobs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

func testRegisterHost(t *testing.T, f store.Fleet) {
	ctx := t.Context()
	t0 := Now().Add(-time.Hour)
	b := store.FleetHost{Host: NewHost().Name("b-host").Memory(64 << 30).CPUs(16).SeenAt(t0).Build(), Version: "1.2.0"}
	a := store.FleetHost{Host: NewHost().Name("a-host").OS("darwin", "arm64").SeenAt(time.Time{}).Build(), Version: "1.1.0"}
	require.NoError(t, f.RegisterHost(ctx, b))
	require.NoError(t, f.RegisterHost(ctx, a))

	hs, err := f.FleetHosts(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, []string{"a-host", "b-host"}, []string{hs[0].Name, hs[1].Name}, "listed by name")
	assert.Equal(t, "1.1.0", hs[0].Version)
	assert.False(t, hs[0].SeenAt.IsZero(), "a zero SeenAt is stamped")
	got := hs[1]
	assert.Equal(t, normHost(b.Host), normHost(got.Host))
	assert.Equal(t, "1.2.0", got.Version)
	assert.True(t, got.RegisteredAt.Equal(t0), "registered at its first heartbeat")

	// A host registering again (a restart, an upgrade) keeps RegisteredAt.
	b.Version, b.MemoryBytes, b.SeenAt = "1.3.0", 32<<30, t0.Add(time.Minute)
	require.NoError(t, f.RegisterHost(ctx, b))
	hs, err = f.FleetHosts(ctx)
	require.NoError(t, err)
	got = hs[1]
	assert.Equal(t, "1.3.0", got.Version)
	assert.Equal(t, uint64(32<<30), got.MemoryBytes)
	assert.True(t, got.SeenAt.Equal(t0.Add(time.Minute)))
	assert.True(t, got.RegisteredAt.Equal(t0), "RegisteredAt %v, want %v", got.RegisteredAt, t0)
}

func testRegisterHostInvalid(t *testing.T, f store.Fleet) {
	err := f.RegisterHost(t.Context(), store.FleetHost{Host: NewHost().ID(rm.HostID{}).Build()})
	require.ErrorIs(t, err, rm.ErrInvalid)
	hs, err := f.FleetHosts(t.Context())
	require.NoError(t, err)
	assert.Empty(t, hs)
}

func testHeartbeat(t *testing.T, f store.Fleet) {
	ctx := t.Context()
	t0 := Now().Add(-time.Hour)
	h := store.FleetHost{Host: NewHost().SeenAt(t0).Build()}
	require.NoError(t, f.RegisterHost(ctx, h))
	seen := func() time.Time {
		hs, err := f.FleetHosts(ctx)
		require.NoError(t, err)
		require.Len(t, hs, 1)
		return hs[0].SeenAt
	}
	require.NoError(t, f.Heartbeat(ctx, h.ID, t0.Add(time.Minute)))
	assert.True(t, seen().Equal(t0.Add(time.Minute)))
	require.NoError(t, f.Heartbeat(ctx, h.ID, t0), "an old heartbeat arriving late")
	assert.True(t, seen().Equal(t0.Add(time.Minute)), "a heartbeat never moves back")

	hs, err := f.FleetHosts(ctx)
	require.NoError(t, err)
	assert.False(t, hs[0].Stale(t0.Add(90*time.Second), time.Minute))
	assert.True(t, hs[0].Stale(t0.Add(3*time.Minute), time.Minute))

	require.ErrorIs(t, f.Heartbeat(ctx, rm.NewHostID(), t0), store.ErrNotFound)
}

// weight is a job weight of policy p for job, ended at end.
func weight(p rm.PolicyID, job store.JobKey, rss uint64, end time.Time) store.JobWeight {
	return store.JobWeight{
		Attempt: rm.NewAttemptID(), Policy: p, Host: rm.NewHostID(), Job: job,
		Usage:    rm.AttemptUsage{PeakRSSBytes: rss, CPUAvgMillicores: uint32(rss >> 20), CPUPeakMillicores: uint32(rss>>20) * 2, Samples: 5},
		Duration: time.Duration(rss>>20) * time.Second, EndedAt: end,
	}
}

var (
	jobBuild = store.JobKey{Repository: "acme/app", Workflow: "ci.yml", Name: "build"}
	jobTest  = store.JobKey{Repository: "acme/app", Workflow: "ci.yml", Name: "test"}
	jobLint  = store.JobKey{Repository: "acme/web", Workflow: "lint.yml", Name: "lint"}
)

func testWeights(t *testing.T, f store.Fleet) {
	ctx := t.Context()
	p := rm.NewPolicyID()
	t0 := Now().Add(-time.Hour)
	// Ten builds peaking at 1..10 MiB, recorded out of order.
	for _, i := range []uint64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4} {
		require.NoError(t, f.RecordJobWeight(ctx, weight(p, jobBuild, i<<20, t0.Add(time.Duration(i)*time.Minute))))
	}
	w, err := f.Weights(ctx, store.WeightFilter{Policy: p})
	require.NoError(t, err)
	assert.Equal(t, store.Weights{
		Count:      10,
		PeakRSSP50: 5 << 20, PeakRSSP90: 9 << 20,
		CPUAvgP50: 5, CPUAvgP90: 9, CPUPeakP50: 10, CPUPeakP90: 18,
		DurationP50: 5 * time.Second, DurationP90: 9 * time.Second,
	}, w, "nearest rank: the 5th and 9th of 10")

	none, err := f.Weights(ctx, store.WeightFilter{Policy: rm.NewPolicyID()})
	require.NoError(t, err)
	assert.Equal(t, store.Weights{}, none)

	// Recording an attempt again replaces its weight.
	heavy := weight(p, jobBuild, 100<<20, t0.Add(time.Hour))
	require.NoError(t, f.RecordJobWeight(ctx, heavy))
	heavy.Usage.PeakRSSBytes = 11 << 20
	require.NoError(t, f.RecordJobWeight(ctx, heavy))
	w, err = f.Weights(ctx, store.WeightFilter{Policy: p})
	require.NoError(t, err)
	assert.Equal(t, 11, w.Count)
	assert.Equal(t, uint64(10<<20), w.PeakRSSP90, "the 10th of 11")

	// The top bit of a peak survives the store.
	big := weight(rm.NewPolicyID(), jobBuild, 1<<62+3, t0)
	require.NoError(t, f.RecordJobWeight(ctx, big))
	w, err = f.Weights(ctx, store.WeightFilter{Policy: big.Policy})
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<62+3), w.PeakRSSP50)
}

func testWeightsFilter(t *testing.T, f store.Fleet) {
	ctx := t.Context()
	p, q := rm.NewPolicyID(), rm.NewPolicyID()
	t0 := Now().Add(-time.Hour)
	for i := range uint64(6) {
		require.NoError(t, f.RecordJobWeight(ctx, weight(p, jobBuild, (i+1)<<20, t0.Add(time.Duration(i)*time.Minute))))
		require.NoError(t, f.RecordJobWeight(ctx, weight(q, jobTest, (i+10)<<20, t0.Add(time.Duration(i)*time.Minute))))
	}
	require.NoError(t, f.RecordJobWeight(ctx, weight(q, jobLint, 50<<20, t0)))
	tests := map[string]struct {
		f         store.WeightFilter
		count     int
		p50, p90  uint64
		otherwise string
	}{
		"All":        {store.WeightFilter{}, 13, 10 << 20, 15 << 20, ""},
		"Policy":     {store.WeightFilter{Policy: q}, 7, 13 << 20, 50 << 20, ""},
		"Job":        {store.WeightFilter{Job: jobTest}, 6, 12 << 20, 15 << 20, ""},
		"Repository": {store.WeightFilter{Job: store.JobKey{Repository: "acme/web"}}, 1, 50 << 20, 50 << 20, ""},
		"Workflow":   {store.WeightFilter{Job: store.JobKey{Workflow: "ci.yml"}, Policy: p}, 6, 3 << 20, 6 << 20, ""},
		"Since":      {store.WeightFilter{Policy: p, Since: t0.Add(4 * time.Minute)}, 2, 5 << 20, 6 << 20, ""},
		"Newest":     {store.WeightFilter{Policy: p, Newest: 3}, 3, 5 << 20, 6 << 20, ""},
		"NoMatch":    {store.WeightFilter{Job: store.JobKey{Name: "deploy"}}, 0, 0, 0, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := f.Weights(ctx, tt.f)
			require.NoError(t, err)
			assert.Equal(t, tt.count, w.Count)
			assert.Equal(t, tt.p50, w.PeakRSSP50, "p50")
			assert.Equal(t, tt.p90, w.PeakRSSP90, "p90")
		})
	}
}

func testWeightInvalid(t *testing.T, f store.Fleet) {
	t0 := Now()
	for name, w := range map[string]store.JobWeight{
		"NoAttempt": {Policy: rm.NewPolicyID(), EndedAt: t0},
		"NoPolicy":  {Attempt: rm.NewAttemptID(), EndedAt: t0},
		"NoEnd":     {Attempt: rm.NewAttemptID(), Policy: rm.NewPolicyID()},
		"Negative":  {Attempt: rm.NewAttemptID(), Policy: rm.NewPolicyID(), EndedAt: t0, Duration: -time.Second},
	} {
		assert.ErrorIs(t, f.RecordJobWeight(t.Context(), w), rm.ErrInvalid, name)
	}
	w, err := f.Weights(t.Context(), store.WeightFilter{})
	require.NoError(t, err)
	assert.Zero(t, w.Count)
}

func testHeaviestJobs(t *testing.T, f store.Fleet) {
	ctx := t.Context()
	p, q := rm.NewPolicyID(), rm.NewPolicyID()
	t0 := Now().Add(-time.Hour)
	rec := func(p rm.PolicyID, job store.JobKey, mib ...uint64) {
		for i, m := range mib {
			require.NoError(t, f.RecordJobWeight(ctx, weight(p, job, m<<20, t0.Add(time.Duration(i)*time.Minute))))
		}
	}
	rec(p, jobBuild, 100, 200, 300, 400)
	rec(p, jobTest, 50, 60)
	rec(q, jobLint, 400, 10)
	rec(q, jobTest, 70)

	js, err := f.HeaviestJobs(ctx, store.WeightFilter{})
	require.NoError(t, err)
	var keys []store.JobKey
	for _, j := range js {
		keys = append(keys, j.Job)
	}
	// build and lint both have a p90 of 400 MiB: more runs first.
	assert.Equal(t, []store.JobKey{jobBuild, jobLint, jobTest}, keys)
	assert.Equal(t, store.Weights{Count: 4, PeakRSSP50: 200 << 20, PeakRSSP90: 400 << 20,
		CPUAvgP50: 200, CPUAvgP90: 400, CPUPeakP50: 400, CPUPeakP90: 800,
		DurationP50: 200 * time.Second, DurationP90: 400 * time.Second}, js[0].Weights)
	assert.Equal(t, 3, js[2].Count, "a job's weights from every policy")

	js, err = f.HeaviestJobs(ctx, store.WeightFilter{Policy: p, Limit: 1})
	require.NoError(t, err)
	require.Len(t, js, 1)
	assert.Equal(t, jobBuild, js[0].Job)

	js, err = f.HeaviestJobs(ctx, store.WeightFilter{Newest: 1})
	require.NoError(t, err)
	require.Len(t, js, 3)
	// The newest of each: build 400, test 60 (p's second) or 70 (q's first, older), lint 10.
	assert.Equal(t, []store.JobKey{jobBuild, jobTest, jobLint}, []store.JobKey{js[0].Job, js[1].Job, js[2].Job})
	assert.Equal(t, uint64(60<<20), js[1].PeakRSSP50)

	none, err := f.HeaviestJobs(ctx, store.WeightFilter{Policy: rm.NewPolicyID()})
	require.NoError(t, err)
	assert.Empty(t, none)
}
