package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/metrics"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// sample is one series of a family as a registry gathers it.
type sample struct {
	labels  map[string]string
	gauge   float64
	count   uint64
	sum     float64
	buckets map[float64]uint64 // upper bound → cumulative count
}

// gather registers m in a fresh registry and returns the series of the
// family name (nil when it has none).
func gather(t *testing.T, m *metrics.Metrics, name string) []sample {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var out []sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			x := sample{labels: map[string]string{}, buckets: map[float64]uint64{}, gauge: s.GetGauge().GetValue()}
			for _, l := range s.GetLabel() {
				x.labels[l.GetName()] = l.GetValue()
			}
			if h := s.GetHistogram(); h != nil {
				x.count, x.sum = h.GetSampleCount(), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					x.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
				}
			}
			out = append(out, x)
		}
	}
	return out
}

// histogram is the policy's series of the histogram name.
func histogram(t *testing.T, m *metrics.Metrics, name, policy string) sample {
	t.Helper()
	for _, s := range gather(t, m, name) {
		if s.labels["policy"] == policy {
			return s
		}
	}
	t.Fatalf("%s has no series of policy %s", name, policy)
	return sample{}
}

func TestJobWaitHistogram(t *testing.T) {
	m := metrics.New(func() status.Status { return status.Status{} }, nil, nil)
	m.ObserveJobStart("home", rm.StartSplit{Assign: time.Second, Ready: 2 * time.Second, Take: time.Second})
	m.ObserveJobStart("home", rm.StartSplit{Assign: 40 * time.Second})
	h := histogram(t, m, "runner_manager_job_wait_seconds", "home")
	assert.Equal(t, uint64(2), h.count)
	assert.InDelta(t, 44, h.sum, 1e-9)
	assert.Equal(t, uint64(1), h.buckets[5], "one job waited at most 5 s")
}

// TestJobStartupAndExecution: the figures ARC's listener names, with
// buckets fine enough for a warm spare's milliseconds, and each part of
// a start.
func TestJobStartupAndExecution(t *testing.T) {
	m := metrics.New(func() status.Status { return status.Status{} }, nil, nil)
	m.ObserveJobStart("home", rm.StartSplit{Assign: 50 * time.Millisecond, Ready: 0, Take: 8 * time.Millisecond})
	m.ObserveJobStart("home", rm.StartSplit{Assign: 30 * time.Millisecond, Ready: 2 * time.Second, Take: 20 * time.Millisecond})
	h := histogram(t, m, "runner_manager_job_startup_duration_seconds", "home")
	assert.Equal(t, uint64(2), h.count)
	assert.InDelta(t, 2.028, h.sum, 1e-9, "assignment to taken: ready + take")
	assert.Equal(t, uint64(1), h.buckets[0.01], "a warm spare's 8 ms is told apart from a boot")
	phases := map[string]sample{}
	for _, s := range gather(t, m, "runner_manager_job_start_phase_seconds") {
		phases[s.labels["phase"]] = s
	}
	require.Len(t, phases, 3)
	assert.InDelta(t, 0.08, phases["assign"].sum, 1e-9)
	assert.InDelta(t, 2, phases["ready"].sum, 1e-9)
	assert.InDelta(t, 0.028, phases["take"].sum, 1e-9)

	m.ObserveJobEnd("home", "succeeded", 90*time.Second)
	m.ObserveJobEnd("home", "failed", 3*time.Second)
	ex := gather(t, m, "runner_manager_job_execution_duration_seconds")
	require.Len(t, ex, 2)
	for _, s := range ex {
		assert.Equal(t, "home", s.labels["policy"])
		assert.Equal(t, uint64(1), s.count)
		assert.Contains(t, []string{"succeeded", "failed"}, s.labels["job_result"])
	}
}

// Start-up (launch → online) is read from the journal: once per attempt,
// also for one that started and ended between two looks.
func TestStartupHistogram(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(ctx, host))
	pol := storetest.NewPolicy().Name("home").Repository("acme/repo").Host(host.ID).Autoscale("home", 4).Active().Build()
	require.NoError(t, st.InsertPolicy(ctx, pol))
	m := metrics.New(func() status.Status { return status.Status{Host: host} }, st, nil)
	require.NoError(t, m.Observe(ctx)) // primes

	t0 := time.Now().UTC()
	move := func(a rm.Attempt, s rm.AttemptState, at time.Time) rm.Attempt {
		a, err := a.MoveTo(s, at)
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(ctx, a))
		return a
	}
	a := storetest.NewAttempt().Policy(pol.ID).Host(host.ID).State(rm.StatePending).CreatedAt(t0).Build()
	require.NoError(t, st.RecordAttempt(ctx, a))
	a = move(a, rm.StateRegistering, t0)
	a = move(a, rm.StateStarting, t0.Add(time.Second))
	require.NoError(t, m.Observe(ctx))
	assert.Empty(t, gather(t, m, "runner_manager_runner_startup_seconds"), "not online yet: nothing observed")

	a = move(a, rm.StateIdle, t0.Add(4*time.Second))
	require.NoError(t, m.Observe(ctx))
	a = move(a, rm.StateBusy, t0.Add(9*time.Second))
	require.NoError(t, m.Observe(ctx))
	h := histogram(t, m, "runner_manager_runner_startup_seconds", "home")
	assert.Equal(t, uint64(1), h.count, "once per attempt")
	assert.InDelta(t, 3, h.sum, 1e-6, "launch to online")

	quick := storetest.NewAttempt().Policy(pol.ID).Host(host.ID).State(rm.StatePending).CreatedAt(t0.Add(time.Second)).Build()
	require.NoError(t, st.RecordAttempt(ctx, quick))
	quick = move(quick, rm.StateRegistering, t0.Add(time.Second))
	quick = move(quick, rm.StateStarting, t0.Add(2*time.Second))
	quick = move(quick, rm.StateBusy, t0.Add(4*time.Second)) // took a job before it was seen idle
	ended, err := quick.Conclude(rm.Outcome{Kind: rm.CompletedJob}, t0.Add(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, st.RecordAttempt(ctx, ended))
	require.NoError(t, m.Observe(ctx))
	h = histogram(t, m, "runner_manager_runner_startup_seconds", "home")
	assert.Equal(t, uint64(2), h.count)
	assert.InDelta(t, 5, h.sum, 1e-6)
}

func TestSecondaryHoldGauge(t *testing.T) {
	m := metrics.New(func() status.Status { return status.Status{} }, nil, nil)
	assert.Empty(t, gather(t, m, "runner_manager_github_secondary_limit_hold_seconds"), "absent until a client tells")

	var until time.Time
	m.SetSecondaryHold(func() time.Time { return until })
	value := func() float64 {
		s := gather(t, m, "runner_manager_github_secondary_limit_hold_seconds")
		require.Len(t, s, 1)
		return s[0].gauge
	}
	assert.Zero(t, value(), "no hold")
	until = time.Now().Add(30 * time.Second)
	assert.InDelta(t, 30, value(), 1, "seconds left")
	until = time.Now().Add(-time.Second)
	assert.Zero(t, value(), "a hold that lifted is 0, never negative")
}
