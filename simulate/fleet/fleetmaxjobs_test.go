package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFleetPolicyHostMaxJobs: each host's [host] max_jobs bounds its share
// of a fleet policy: the room it publishes and the jobs it runs at once,
// whatever the policy's fleet-wide max.
func TestFleetPolicyHostMaxJobs(t *testing.T) {
	const max, n = 8, 12
	f := newSharedFleet(t, max, "alpha", "beta")
	bound := map[string]int{"alpha": 1, "beta": 2}
	for _, h := range f.hosts {
		h.env = append(h.env, fmt.Sprintf("RUNNER_MANAGER_MAX_JOBS=%d", bound[h.name]))
		h.start()
	}
	st := f.open()
	f.waitFor(time.Minute, "every host published its room", func() bool {
		rs := f.rooms(t, st)
		return len(rs) == len(f.hosts)
	})
	for name, r := range f.rooms(t, st) {
		assert.LessOrEqual(t, r.Capacity, bound[name], "%s's room is within its max_jobs", name)
	}
	f.enqueueShared(n, time.Second)
	f.waitFor(2*time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == n })
	for name, r := range f.rooms(t, st) {
		assert.LessOrEqual(t, r.Capacity, bound[name], "%s's room is within its max_jobs", name)
	}
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	most := f.maxAtOncePerHost(t, st)
	for h, n := range most {
		assert.LessOrEqual(t, n, bound[h], "%s ran no more jobs at once than its max_jobs", h)
	}
	t.Logf("jobs per host %v, most at once per host %v (max_jobs %v), fleet-wide %d", perHost, most, bound, maxAtOnce(f.fake.Jobs()))
	assert.LessOrEqual(t, maxAtOnce(f.fake.Jobs()), 3, "the fleet ran at most the hosts' bounds together")
	assert.Equal(t, n, perHost["alpha"]+perHost["beta"])
}
