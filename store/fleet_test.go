package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		n        int
		p        float64
		wantRank int
	}{
		{1, 0.5, 1}, {1, 0.9, 1}, {2, 0.5, 1}, {2, 0.9, 2}, {10, 0.5, 5}, {10, 0.9, 9},
		{11, 0.9, 10}, {20, 0.9, 18}, {3, 1, 3}, {4, 0.01, 1},
	}
	for _, tt := range tests {
		vs := make([]int, tt.n)
		for i := range vs {
			vs[i] = i + 1
		}
		assert.Equal(t, tt.wantRank, store.Percentile(vs, tt.p), "p%v of %d", tt.p, tt.n)
	}
	assert.Zero(t, store.Percentile([]int(nil), 0.5))
}

func TestWeightOf(t *testing.T) {
	h := rm.NewHostID()
	p := rm.NewPolicyID()
	done := storetest.NewAttempt().Policy(p).State(rm.StateFinished).
		Job(rm.Job{ID: "1", Number: 1, Workflow: "ci.yml", Name: "build"}).Usage(rm.AttemptUsage{PeakRSSBytes: 1 << 30}).Build()
	w, ok := store.WeightOf(done, h, "acme/app")
	assert.True(t, ok)
	assert.Equal(t, store.JobKey{Repository: "acme/app", Workflow: "ci.yml", Name: "build"}, w.Job)
	assert.Equal(t, done.EndedAt.Sub(done.BusyAt), w.Duration, "busy to ended")
	assert.Equal(t, uint64(1<<30), w.Usage.PeakRSSBytes)
	assert.Equal(t, h, w.Host)
	assert.NoError(t, w.Validate())

	idle := storetest.NewAttempt().Policy(p).State(rm.StateFinished).Outcome(rm.Outcome{Kind: rm.ExitedIdleWithoutWork}).Build()
	_, ok = store.WeightOf(idle, h, "acme/app")
	assert.False(t, ok, "an idle exit weighs nothing")
	failed := storetest.NewAttempt().Policy(p).State(rm.StateFailed).Build()
	_, ok = store.WeightOf(failed, h, "acme/app")
	assert.False(t, ok, "a failure weighs nothing")
	live := storetest.NewAttempt().Policy(p).State(rm.StateBusy).Build()
	_, ok = store.WeightOf(live, h, "acme/app")
	assert.False(t, ok)
}

func TestStale(t *testing.T) {
	now := time.Now()
	assert.True(t, store.FleetHost{}.Stale(now, time.Minute), "never seen")
	h := store.FleetHost{Host: rm.Host{SeenAt: now.Add(-30 * time.Second)}}
	assert.False(t, h.Stale(now, time.Minute))
	assert.True(t, h.Stale(now, 10*time.Second))
}
