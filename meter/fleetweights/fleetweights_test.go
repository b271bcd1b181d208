package fleetweights_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/meter/fleetweights"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

const mib = 1 << 20

// counting is a store that counts the fleet's weight reads.
type counting struct {
	*sqlite.Store
	weightReads int
}

func (c *counting) Weights(ctx context.Context, f store.WeightFilter) (store.Weights, error) {
	c.weightReads++
	return c.Store.Weights(ctx, f)
}

// finished writes a concluded attempt of p that ran job with peak.
func finished(t *testing.T, st store.Store, host rm.HostID, p rm.PolicyID, job rm.Job, peak uint64) rm.AttemptID {
	t.Helper()
	a := storetest.NewAttempt().Policy(p).Host(host).State(rm.StateFinished).Job(job).
		Usage(rm.AttemptUsage{PeakRSSBytes: peak, CPUAvgMillicores: 500, Samples: 3}).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))
	return a.ID
}

func TestEndedRecordsTheWeightAndAdmissionReadsTheFleets(t *testing.T) {
	st := &counting{Store: sqlitetest.MustOpen(t)}
	hostA, hostB := storetest.NewHost().Build(), storetest.NewHost().Build()
	for _, h := range []rm.Host{hostA, hostB} {
		require.NoError(t, st.PutHost(t.Context(), h))
	}
	p := storetest.NewPolicy().Repository("acme/app").Host(hostA.ID).Autoscale("home", 4).Build()
	require.NoError(t, st.InsertPolicy(t.Context(), p))

	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	a := fleetweights.Wrap(meter.New(""), st, hostA.ID, fleetweights.Options{Admit: true, Now: clock})
	b := fleetweights.Wrap(meter.New(""), st, hostB.ID, fleetweights.Options{Admit: true, Now: clock, RefreshEvery: time.Minute})

	const estimate = 2 << 30
	assert.Equal(t, uint64(estimate), b.ExpectedPeak(p.ID, estimate), "no weight anywhere: the estimate")
	assert.Equal(t, 1, st.weightReads)

	job := rm.Job{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", Workflow: "ci", Name: "build"}
	for _, peak := range []uint64{300, 400, 500} {
		id := finished(t, st, hostA.ID, p.ID, job, peak*mib)
		a.Ended(id, rm.Outcome{Kind: rm.CompletedJob})
	}
	idle := finished(t, st, hostA.ID, p.ID, rm.Job{}, 9000*mib)
	a.Ended(idle, rm.Outcome{Kind: rm.ExitedIdleWithoutWork}) // says nothing of a job

	js, err := st.HeaviestJobs(t.Context(), store.WeightFilter{})
	require.NoError(t, err)
	require.Len(t, js, 1)
	assert.Equal(t, store.JobKey{Repository: "acme/app", Workflow: "ci", Name: "build"}, js[0].Job)
	assert.Equal(t, 3, js[0].Count)
	assert.Equal(t, uint64(500*mib), js[0].PeakRSSP90)

	ws, err := st.Weights(t.Context(), store.WeightFilter{Policy: p.ID})
	require.NoError(t, err)
	require.Equal(t, 3, ws.Count)

	// B read the fleet a moment ago and saw nothing: its figure holds until
	// the refresh, without a read per question.
	reads := st.weightReads
	for range 10 {
		assert.Equal(t, uint64(estimate), b.ExpectedPeak(p.ID, estimate))
	}
	assert.Equal(t, reads, st.weightReads, "cached: no read per question")
	now = now.Add(time.Minute)
	want := uint64(500*mib) + uint64(500*mib)/10
	assert.Equal(t, want, b.ExpectedPeak(p.ID, estimate), "host B expects what host A's jobs weighed")
	assert.Equal(t, reads+1, st.weightReads)

	assert.Equal(t, want, a.ExpectedPeak(p.ID, estimate))

	// Recording again replaces: GitHub's later word names the job.
	id := finished(t, st, hostA.ID, p.ID, rm.Job{}, 800*mib)
	a.Ended(id, rm.Outcome{Kind: rm.CompletedJob})
	at, err := st.Attempt(t.Context(), id)
	require.NoError(t, err)
	at.Job = rm.Job{ID: "9", Number: 9, Workflow: "nightly", Name: "soak"}
	require.NoError(t, st.RecordAttempt(t.Context(), at))
	a.Ended(id, rm.Outcome{Kind: rm.CompletedJob})
	ws, err = st.Weights(t.Context(), store.WeightFilter{Policy: p.ID})
	require.NoError(t, err)
	assert.Equal(t, 4, ws.Count, "the same attempt counts once")
	soak, err := st.HeaviestJobs(t.Context(), store.WeightFilter{Job: store.JobKey{Name: "soak"}})
	require.NoError(t, err)
	require.Len(t, soak, 1)
	assert.Equal(t, 1, soak[0].Count)

	// This host's own ended job refreshes its figure at once, the clock
	// standing still.
	assert.Equal(t, uint64(800*mib)+uint64(800*mib)/10, a.ExpectedPeak(p.ID, estimate))
}

func TestWithoutAdmitTheBankedPeaksAnswer(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), host))
	p := storetest.NewPolicy().Repository("acme/app").Host(host.ID).Autoscale("home", 4).Build()
	require.NoError(t, st.InsertPolicy(t.Context(), p))
	inner := meter.New("")
	m := fleetweights.Wrap(inner, st, host.ID, fleetweights.Options{})
	id := finished(t, st, host.ID, p.ID, rm.Job{Name: "build"}, 700*mib)
	m.Ended(id, rm.Outcome{Kind: rm.CompletedJob})
	ws, err := st.Weights(t.Context(), store.WeightFilter{Policy: p.ID})
	require.NoError(t, err)
	assert.Equal(t, 1, ws.Count, "recorded all the same")
	assert.Equal(t, uint64(1<<30), m.ExpectedPeak(p.ID, 1<<30), "the meters banked no peak (never sampled): the estimate")
}

func TestRecordFailureIsLoggedNotFatal(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	m := fleetweights.Wrap(meter.New(""), st, host.ID, fleetweights.Options{})
	require.NotPanics(t, func() { m.Ended(rm.NewAttemptID(), rm.Outcome{Kind: rm.CompletedJob}) })
}

func TestRepositoryOf(t *testing.T) {
	repo := storetest.NewPolicy().Repository("acme/app").Build()
	org := storetest.NewPolicy().Org("acme").Build()
	for _, tt := range []struct {
		p    rm.Policy
		wf   string
		want string
	}{
		{repo, "ci", "acme/app"},
		{org, "acme/web/.github/workflows/ci.yml@refs/heads/main", "acme/web"},
		{org, "CI", ""},
		{org, "acme/web", ""},
	} {
		assert.Equal(t, tt.want, fleetweights.RepositoryOf(tt.p, rm.Job{Workflow: tt.wf}), "%s %q", tt.p.Target, tt.wf)
	}
}

// The reads admission adds: at most one per policy per RefreshEvery,
// however often the passes ask. Ten policies, passes asking three times per
// policy (status, capacity, a launch) for ten minutes: 20 reads, whether a
// pass comes every 3 s (busy) or every minute (idle).
func TestExpectedPeakReadBudget(t *testing.T) {
	st := &counting{Store: sqlitetest.MustOpen(t)}
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), host))
	var ps []rm.PolicyID
	for i := range 10 {
		p := storetest.NewPolicy().Name(fmt.Sprintf("p%d", i)).Repository("acme/app").Host(host.ID).Autoscale(fmt.Sprintf("s%d", i), 4).Build()
		require.NoError(t, st.InsertPolicy(t.Context(), p))
		ps = append(ps, p.ID)
	}
	now := time.Unix(1_700_000_000, 0)
	m := fleetweights.Wrap(meter.New(""), st, host.ID, fleetweights.Options{Admit: true, Now: func() time.Time { return now }})
	passes := func(every, window time.Duration) int {
		before := st.weightReads
		for end := now.Add(window); now.Before(end); now = now.Add(every) {
			for _, p := range ps {
				for range 3 {
					m.ExpectedPeak(p, 1<<30)
				}
			}
		}
		return st.weightReads - before
	}
	active := passes(3*time.Second, 10*time.Minute)
	assert.Equal(t, 20, active, "reads in ten busy minutes")
	idle := passes(time.Minute, 10*time.Minute)
	assert.Equal(t, 20, idle, "reads in ten idle minutes")
	t.Logf("reads a minute with 10 policies: %.1f busy (a pass every 3 s), %.1f idle (a pass a minute)", float64(active)/10, float64(idle)/10)
}
