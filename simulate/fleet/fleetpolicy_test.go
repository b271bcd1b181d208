package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// sharedLabel is the fleet policy's scale set in these tests.
const sharedLabel = "shared"

// newSharedFleet is a fleet of bare hosts serving one fleet policy of
// max, added by the first host.
func newSharedFleet(t *testing.T, max int, names ...string) *fleet {
	t.Helper()
	return newSharedFleetOn(t, pgtest.Start(t), max, nil, names...)
}

// newSharedFleetOn is newSharedFleet on database url, with more flags of
// the policy's `policy add` (a --memory-estimate there replaces 64MiB).
func newSharedFleetOn(t *testing.T, url string, max int, policyArgs []string, names ...string) *fleet {
	t.Helper()
	f := newFleetWith(t, url, nil)
	f.bare = true
	for _, n := range names {
		f.addHost(n)
	}
	args := []string{"policy", "add", "shared", "--repo", repo, "--scale-set", sharedLabel, "--max", fmt.Sprint(max), "--fleet",
		"--runner-dir", f.runner}
	if !slices.Contains(policyArgs, "--memory-estimate") {
		args = append(args, "--memory-estimate", "64MiB")
	}
	f.hosts[0].cli(append(args, policyArgs...)...)
	return f
}

// enqueueShared queues n jobs of the fleet policy, of d each.
func (f *fleet) enqueueShared(n int, d time.Duration) {
	for i := range n {
		f.fake.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{sharedLabel}, Duration: d, MemoryBytes: 4 << 20,
			Name: fmt.Sprintf("shared-job-%d", i%5)})
	}
}

// runnerHostName is the host whose runner name prefix a runner has.
func (f *fleet) runnerHostName(t *testing.T, st store.Store, runner string) string {
	hosts, err := st.Hosts(context.Background())
	require.NoError(t, err)
	for _, h := range hosts {
		if strings.HasPrefix(runner, rm.RunnerNamePrefix(h.ID)) {
			return h.Name
		}
	}
	return ""
}

// maxAtOncePerHost is, per host name, the most of the fake's jobs its
// runners ran at the same time.
func (f *fleet) maxAtOncePerHost(t *testing.T, st store.Store) map[string]int {
	byHost := map[string][]fakegithub.JobRecord{}
	for _, j := range f.fake.Jobs() {
		on := f.runnerHostName(t, st, j.RunnerName)
		byHost[on] = append(byHost[on], j)
	}
	most := map[string]int{}
	for h, js := range byHost {
		most[h] = maxAtOnce(js)
	}
	return most
}

// maxAtOnce is the most jobs of the fake that ran at the same time.
func maxAtOnce(jobs []fakegithub.JobRecord) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, j := range jobs {
		if !j.StartedAt.IsZero() && !j.CompletedAt.IsZero() {
			es = append(es, edge{j.StartedAt, 1}, edge{j.CompletedAt, -1})
		}
	}
	slices.SortFunc(es, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// checkFleetServed checks the end of a fleet policy's run: every job
// completed once, at most max at once fleet-wide, nothing live, registered
// or running; it returns the jobs each host ran.
func checkFleetServed(t *testing.T, f *fleet, max int) map[string]int {
	t.Helper()
	st := f.open()
	ctx := context.Background()
	jobs := f.fake.Jobs()
	perHost := map[string]int{}
	for _, j := range jobs {
		if !assert.Equal(t, "completed", j.Status, "job %d", j.ID) {
			continue
		}
		assert.Equal(t, "succeeded", j.Result, "job %d", j.ID)
		assert.Equal(t, 1, j.Starts, "job %d ran exactly once", j.ID)
		perHost[f.runnerHostName(t, st, j.RunnerName)]++
	}
	assert.LessOrEqual(t, maxAtOnce(jobs), max, "never more than the fleet's max at once")
	ps, err := st.Policies(ctx)
	require.NoError(t, err)
	for _, p := range ps {
		as, err := st.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
		require.NoError(t, err)
		for _, a := range as {
			assert.NotContains(t, liveStates, a.State, "attempt %s is still live", a.ID)
		}
	}
	assert.Empty(t, f.fake.Runners(), "no registration is left")
	for _, h := range f.hosts {
		assert.Empty(t, h.runnerProcesses(), "no runner process of %s is left", h.name)
	}
	return perHost
}

// holderOf is the host holding the fleet policy's lease now.
func (f *fleet) holderOf(t *testing.T, st store.Store) (*host, store.FleetLease) {
	t.Helper()
	sets, ok := st.(store.FleetSets)
	require.True(t, ok, "the fleet's journal keeps fleet sets")
	ps, err := st.Policies(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	l, err := sets.FleetLease(context.Background(), ps[0].ID)
	if err != nil {
		return nil, store.FleetLease{}
	}
	hosts, err := st.Hosts(context.Background())
	require.NoError(t, err)
	for _, h := range hosts {
		if h.ID == l.Holder {
			for _, fh := range f.hosts {
				if fh.name == h.Name {
					return fh, l
				}
			}
		}
	}
	return nil, l
}

// TestFleetPolicyServesJobsOnEveryHost: one fleet policy, three hosts:
// every job served once, never more than max at once fleet-wide, the jobs
// spread over the hosts, nothing left.
func TestFleetPolicyServesJobsOnEveryHost(t *testing.T) {
	const max = 4
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	const n = 60
	f.enqueueShared(n, 300*time.Millisecond)
	f.waitFor(3*time.Minute, fmt.Sprintf("%d jobs completed", n), func() bool { all, _ := f.jobsDone(""); return all == n })
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	t.Logf("jobs per host: %v", perHost)
	assert.GreaterOrEqual(t, len(perHost), 2, "the fleet's jobs ran on more than one host: %v", perHost)
	assert.Zero(t, perHost[""], "every job ran on a runner of a host of the fleet")
}

// TestFleetPolicyHolderKilled: kill -9 of the host holding the fleet's
// session mid-run: another host takes the lease over, deletes the dead
// holder's session, and serves on; the next job starts within seconds, no
// job is lost or run twice, and the killed host, back, leaves nothing.
func TestFleetPolicyHolderKilled(t *testing.T) {
	const max = 3
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	st := f.open()
	var victim *host
	f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { victim, _ = f.holderOf(t, st); return victim != nil })
	f.enqueueShared(12, time.Second)
	f.waitFor(time.Minute, "jobs running", func() bool { all, _ := f.jobsDone(""); return all >= 3 })
	_, before := f.holderOf(t, st)

	victim.kill9()
	killed := time.Now()
	f.enqueueShared(1, 200*time.Millisecond)
	next := f.fake.Jobs()[len(f.fake.Jobs())-1].ID

	var after store.FleetLease
	f.waitFor(30*time.Second, "another host holds the lease", func() bool {
		h, l := f.holderOf(t, st)
		after = l
		return h != nil && h != victim
	})
	t.Logf("lease taken over %s after the kill", time.Since(killed).Round(10*time.Millisecond))
	assert.Greater(t, after.Token, before.Token, "the new holder's token fences the old one")
	var started time.Time
	f.waitFor(time.Minute, "the job queued after the kill started", func() bool {
		for _, j := range f.fake.Jobs() {
			if j.ID == next && !j.StartedAt.IsZero() {
				started = j.StartedAt
				return true
			}
		}
		return false
	})
	took := started.Sub(killed)
	t.Logf("holder %s killed; the next job started %s later", victim.name, took.Round(10*time.Millisecond))
	// The goal is 10 s (a 6 s lease, a new session, a runner's start);
	// the test allows for a loaded machine.
	assert.Less(t, took, 30*time.Second)

	victim.start()
	f.waitFor(2*time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == 13 })
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	checkFleetServed(t, f, max)
}
