//go:build linux

package reconcile_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/status"
)

// A banked peak larger than the host admits: the refusal and its reason
// show within one pass, the policy still serves one job at a time, and
// fully again once smaller peaks are learned.
func TestE2EPeakLargerThanTheHost(t *testing.T) {
	w := newWorld(t, worldOpts{max: 4})
	peaks := filepath.Join(w.dataDir, "state", "memory-peaks.toml")
	require.NoError(t, datadir.SavePeaks(peaks, datadir.Peaks{Policies: map[string][]uint64{w.policy.ID.String(): {7 * gib / 2}}}))
	w.meters = meter.New(peaks)
	// 4 GiB less 512 MiB admits 3.5 GiB; the peak with its headroom is 3.85 (printed 3.8).
	adm := &reconcile.Admission{Memory: fakeMemory{total: 4 * gib}, Reserve: gib / 2}
	const jobs = 12
	w.enqueue(jobs, 200*time.Millisecond, 8<<20)
	sup, _ := w.run(w.supervisorConfig(nil, adm))

	var ps status.Policy
	require.Eventually(t, func() bool {
		st := sup.Status()
		if len(st.Policies) != 1 {
			return false
		}
		ps = st.Policies[0]
		return ps.LastRefusal != ""
	}, 2*time.Second, 5*time.Millisecond, "the refusal shows within a pass")
	assert.Contains(t, ps.LastRefusal, "memory: its jobs need ~3.8GiB, this host admits 3.5GiB at most (4GiB total − 512MiB reserve)")
	assert.Equal(t, 1, ps.Admitted, "GitHub is told 1, not 0")
	assert.Positive(t, sup.Status().Refusals[status.RefusedMemory], "counted for the metrics")
	assert.Equal(t, 1, strings.Count(w.logs.String(), "do not fit this host"), "logged once")

	w.waitJobs(90 * time.Second)
	done := w.fake.Jobs()
	slices.SortFunc(done, func(a, b fakegithub.JobRecord) int { return a.StartedAt.Compare(b.StartedAt) })
	// Until ten peaks are banked, the 90th percentile is the large one.
	for i := 1; i < 9; i++ {
		assert.False(t, done[i].StartedAt.Before(done[i-1].CompletedAt), "job %d ran alone, after job %d", i, i-1)
	}
	require.Eventually(t, func() bool {
		ps = sup.Status().Policies[0]
		return ps.Admitted == 4 && ps.LastRefusal == ""
	}, 10*time.Second, 20*time.Millisecond, "learned smaller peaks: admitted fully again")
	assert.Less(t, ps.ExpectedPeakBytes, uint64(gib))
	assert.Contains(t, w.logs.String(), "fit this host again")
	w.settled(30 * time.Second)
}
