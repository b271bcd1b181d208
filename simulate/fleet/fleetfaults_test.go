package fleet_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// machineMemory is this machine's memory as every host's admission reads
// it (the hosts share the machine; their reserves make them differ).
func machineMemory(t *testing.T) uint64 {
	t.Helper()
	total, _, err := platform.HostMemory()
	require.NoError(t, err)
	return total
}

// reserveRe finds the memory reserve `init` writes into config.toml.
var reserveRe = regexp.MustCompile(`(?m)^memory_reserve = .*$`)

// setReserve sets the host's [admission] memory_reserve in its
// config.toml, read at its next start: admission admits runners within
// the machine's memory less it.
func (h *host) setReserve(t *testing.T, reserve uint64) {
	t.Helper()
	b, err := os.ReadFile(h.config)
	require.NoError(t, err)
	require.True(t, reserveRe.Match(b), "%s's config.toml has no memory_reserve line:\n%s", h.name, b)
	b = reserveRe.ReplaceAll(b, fmt.Appendf(nil, "memory_reserve = \"%dMiB\"", (reserve+1<<20-1)>>20))
	require.NoError(t, os.WriteFile(h.config, b, 0o600))
}

// leaveFree sets the host's reserve so that its admission has free of the
// machine's memory for runners.
func (h *host) leaveFree(t *testing.T, free uint64) {
	t.Helper()
	total := machineMemory(t)
	require.Greater(t, total, free)
	h.setReserve(t, total-free)
}

// floorRe finds the disk floor `init` writes into config.toml.
var floorRe = regexp.MustCompile(`(?m)^disk_floor = .*$`)

// makeFull sets the host's [admission] disk_floor above the free space of
// its file system (halfway to its size, so the floor stays a floor a disk
// could meet): its admission admits nothing, as a host whose disk filled
// up. A memory reserve beyond the machine's memory would say the same,
// but is refused at start.
func (h *host) makeFull(t *testing.T) {
	t.Helper()
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(h.home, &fs))
	free, size := fs.Bavail*uint64(fs.Bsize), fs.Blocks*uint64(fs.Bsize)
	require.Greater(t, size, free)
	h.setDiskFloor(t, fmt.Sprintf("%dMiB", (free+(size-free)/2)>>20))
}

// setDiskFloor sets the host's [admission] disk_floor in its config.toml,
// read at its next start.
func (h *host) setDiskFloor(t *testing.T, floor string) {
	t.Helper()
	b, err := os.ReadFile(h.config)
	require.NoError(t, err)
	require.True(t, floorRe.Match(b), "%s's config.toml has no disk_floor line:\n%s", h.name, b)
	b = floorRe.ReplaceAll(b, fmt.Appendf(nil, "disk_floor = %q", floor))
	require.NoError(t, os.WriteFile(h.config, b, 0o600))
}

// fleetPolicy is the one policy of a fleet of bare hosts.
func (f *fleet) fleetPolicy(t *testing.T, st store.Store) rm.Policy {
	t.Helper()
	ps, err := st.Policies(context.Background())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.True(t, ps[0].Fleet, "the policy is the fleet's")
	return ps[0]
}

// rooms are the fleet policy's rooms as the hosts published them, by host
// name.
func (f *fleet) rooms(t *testing.T, st store.Store) map[string]store.FleetRoom {
	t.Helper()
	ctx := context.Background()
	rs, err := st.(store.FleetSets).FleetRooms(ctx, f.fleetPolicy(t, st).ID)
	require.NoError(t, err)
	hosts, err := st.Hosts(ctx)
	require.NoError(t, err)
	names := map[rm.HostID]string{}
	for _, h := range hosts {
		names[h.ID] = h.Name
	}
	out := map[string]store.FleetRoom{}
	for _, r := range rs {
		out[names[r.Host]] = r
	}
	return out
}

// sharedScaleSet is the fleet policy's scale set as the fake holds it.
func (f *fleet) sharedScaleSet() (fakegithub.ScaleSetRecord, bool) {
	for _, ss := range f.fake.ScaleSets() {
		if ss.Name == sharedLabel {
			return ss, true
		}
	}
	return fakegithub.ScaleSetRecord{}, false
}

// holdsFor checks that cond holds throughout d, polling it; it fails the
// test the first time it does not.
func (f *fleet) holdsFor(d time.Duration, what string, cond func() bool) {
	f.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !cond() {
			f.dumpLogs()
			f.t.Fatalf("no longer so within %s: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// enqueueNamed queues n jobs of the fleet policy named name, of d each,
// each allocating mem.
func (f *fleet) enqueueNamed(n int, name string, d time.Duration, mem uint64) []int64 {
	ids := make([]int64, 0, n)
	for range n {
		ids = append(ids, f.fake.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{sharedLabel}, Duration: d, MemoryBytes: mem, Name: name}))
	}
	return ids
}

// ranOn is the host each of the jobs ran on (by its runner's name), by
// job id.
func (f *fleet) ranOn(t *testing.T, st store.Store, ids []int64) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, id := range ids {
		j, ok := f.fake.Job(id)
		require.True(t, ok)
		out[id] = f.runnerHostName(t, st, j.RunnerName)
	}
	return out
}

// hostID is the id of the host of that name.
func (f *fleet) hostID(t *testing.T, st store.Store, name string) rm.HostID {
	t.Helper()
	hosts, err := st.Hosts(context.Background())
	require.NoError(t, err)
	for _, h := range hosts {
		if h.Name == name {
			return h.ID
		}
	}
	t.Fatalf("no host %s in the fleet", name)
	return rm.HostID{}
}

// completedInJournal counts the fleet policy's attempts concluded
// CompletedJob.
func completedInJournal(t *testing.T, f *fleet, st store.Store) int {
	t.Helper()
	as, err := st.Attempts(context.Background(), store.AttemptFilter{Policy: f.fleetPolicy(t, st).ID})
	require.NoError(t, err)
	n := 0
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			n++
		}
	}
	return n
}

// TestFleetPolicyDatabaseRestart: PostgreSQL restarted under a fleet
// policy mid-run: the hosts live on, a host holds the lease again, and
// every job is served once, none left.
func TestFleetPolicyDatabaseRestart(t *testing.T) {
	const max, n = 4, 40
	srv := pgtest.New(t)
	f := newSharedFleetOn(t, srv.URL(srv.CreateDatabase(t)), max, nil, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	f.enqueueShared(n, 500*time.Millisecond)
	f.waitFor(2*time.Minute, "jobs under way", func() bool { all, _ := f.jobsDone(""); return all >= 12 })
	require.NoError(t, srv.Stop())
	stopped := time.Now()
	time.Sleep(4 * time.Second) // the outage itself, not a wait for a result
	require.NoError(t, srv.Start())
	for _, h := range f.hosts {
		require.True(t, h.alive(), "%s survived the database's restart", h.name)
	}
	st := f.open()
	var holder *host
	f.waitFor(time.Minute, "a host holds the fleet's lease again", func() bool { holder, _ = f.holderOf(t, st); return holder != nil })
	f.waitFor(3*time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == n })
	t.Logf("database down 4 s; %d jobs done %s after it stopped; %s holds the lease", n, time.Since(stopped).Round(100*time.Millisecond), holder.name)
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	t.Logf("jobs per host: %v", perHost)
	assert.Equal(t, n, completedInJournal(t, f, st), "each job's attempt concluded CompletedJob in the journal")
}

// TestFleetPolicyEveryHostFull: no host's admission admits a runner: the
// holder tells GitHub a capacity of 0 and the jobs wait there, none
// started; once one host has room (restarted with a sane reserve) they
// all run on it.
func TestFleetPolicyEveryHostFull(t *testing.T) {
	const max, n = 4, 6
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.makeFull(t)
		h.start()
	}
	st := f.open()
	f.waitFor(time.Minute, "every host published a room of 0", func() bool {
		rs := f.rooms(t, st)
		for _, h := range f.hosts {
			if r, ok := rs[h.name]; !ok || r.Capacity != 0 {
				return false
			}
		}
		return true
	})
	var holder *host
	f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { holder, _ = f.holderOf(t, st); return holder != nil })
	f.waitFor(30*time.Second, "the fleet's session open", func() bool {
		ss, ok := f.sharedScaleSet()
		return ok && ss.SessionOwner != ""
	})
	ids := f.enqueueNamed(n, "waits", time.Second, 4<<20)

	noneStarted := func() bool {
		for _, j := range f.fake.Jobs() {
			if j.Starts > 0 || j.Status != "queued" {
				return false
			}
		}
		ss, _ := f.sharedScaleSet()
		return ss.MaxCapacity == 0 && len(f.fake.Runners()) == 0
	}
	// Long enough for the holder to see the jobs and place them (it acts
	// within a second of a message) and for a runner to start if one were
	// asked for.
	f.holdsFor(5*time.Second, "capacity 0 told, no runner registered, every job queued", noneStarted)
	status := f.hosts[1].cli("status")
	t.Logf("held by %s; status while every host is full:\n%s", holder.name, status)
	for _, h := range f.hosts {
		assert.Contains(t, status, h.name+" 0 jobs (no room)", "status says %s has no room", h.name)
	}

	room := f.hosts[2]
	require.NoError(t, room.stop(30*time.Second))
	room.setReserve(t, 2<<30)
	room.setDiskFloor(t, "1GiB")
	room.start()
	given := time.Now()
	t.Cleanup(func() { // what the fleet looked like, when the jobs did not run
		if t.Failed() {
			ss, _ := f.sharedScaleSet()
			t.Logf("scale set at the end: %+v", ss)
			for name, r := range f.rooms(t, st) {
				t.Logf("room of %s: %+v", name, r)
			}
			out, err := room.try("status")
			t.Logf("status: %s %v", out, err)
			out, err = room.try("jobs")
			t.Logf("jobs: %s %v", out, err)
		}
	})
	f.waitFor(time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == n })
	t.Logf("%d jobs done %s after %s got room", n, time.Since(given).Round(100*time.Millisecond), room.name)
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	assert.Equal(t, map[string]int{room.name: n}, perHost, "every job ran on the one host with room")
	for id, on := range f.ranOn(t, st, ids) {
		assert.Equal(t, room.name, on, "job %d", id)
	}
}

// TestFleetPolicyOneHostFull: one host's admission admits nothing, and it
// holds the session: it places every job on the other two.
func TestFleetPolicyOneHostFull(t *testing.T) {
	const max, n = 4, 30
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	full := f.hosts[0]
	full.makeFull(t)
	full.start()
	st := f.open()
	f.waitFor(time.Minute, "the full host holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h == full })
	for _, h := range f.hosts[1:] {
		h.start()
	}
	f.enqueueShared(n, 300*time.Millisecond)
	f.waitFor(2*time.Minute, "every job completed", func() bool { all, _ := f.jobsDone(""); return all == n })
	holder, _ := f.holderOf(t, st)
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	t.Logf("jobs per host: %v (%s full; %s held the lease at the end)", perHost, full.name, holder.name)
	assert.Zero(t, perHost[full.name], "no job ran on the full host")
	assert.Equal(t, n, perHost["beta"]+perHost["gamma"], "every job ran on the hosts with room")
}

// TestFleetPolicyHeavyJob: a job heavier than two hosts' free memory runs
// on the third, whether its weight was learned from an earlier run or is
// the policy's estimate.
func TestFleetPolicyHeavyJob(t *testing.T) {
	t.Run("learned weight", func(t *testing.T) {
		const max = 4
		const heavyMem = 512 << 20
		f := newSharedFleetOn(t, pgtest.Start(t), max, []string{"--spare", "0"}, "alpha", "beta", "gamma")
		for _, h := range f.hosts {
			h.start()
		}
		// The fleet learns the weights: one heavy run and enough light
		// ones that the policy's expected peak (the p90 of its newest 20)
		// stays light. A job's weight is recorded once its usage was
		// sampled (every 2 s): each lasts longer.
		f.enqueueNamed(1, "heavy", 5*time.Second, heavyMem)
		f.enqueueNamed(12, "light", 2500*time.Millisecond, 4<<20)
		f.waitFor(2*time.Minute, "the learning jobs completed", func() bool { all, _ := f.jobsDone(""); return all == 13 })
		for _, h := range f.hosts {
			require.NoError(t, h.stop(30*time.Second))
		}
		st := f.open()
		fl := st.(store.Fleet)
		ctx := context.Background()
		heavy, err := fl.Weights(ctx, store.WeightFilter{Job: store.JobKey{Name: "heavy"}, Newest: 20})
		require.NoError(t, err)
		light, err := fl.Weights(ctx, store.WeightFilter{Job: store.JobKey{Name: "light"}, Newest: 20})
		require.NoError(t, err)
		pol, err := fl.Weights(ctx, store.WeightFilter{Policy: f.fleetPolicy(t, st).ID, Newest: 20})
		require.NoError(t, err)
		t.Logf("learned: heavy p90 %s (%d runs), light p90 %s (%d runs), the policy's p90 %s",
			bytesize.Format(heavy.PeakRSSP90), heavy.Count, bytesize.Format(light.PeakRSSP90), light.Count, bytesize.Format(pol.PeakRSSP90))
		require.Equal(t, 1, heavy.Count, "the heavy job's weight is recorded")
		require.GreaterOrEqual(t, light.Count, 10, "the light jobs' weights are recorded")
		require.GreaterOrEqual(t, heavy.PeakRSSP90, uint64(heavyMem), "the heavy job's peak is what it allocated")

		// Two tight hosts: room for many light jobs, not for the heavy one.
		const tight = 384 << 20
		require.Less(t, 4*pol.PeakRSSP90, uint64(tight), "the policy's expected peak is light")
		for _, h := range f.hosts[:2] {
			h.leaveFree(t, tight)
		}
		for _, h := range f.hosts {
			h.start()
		}
		roomy := f.hosts[2]
		f.waitFor(time.Minute, "every host published its room", func() bool {
			rs := f.rooms(t, st)
			for _, h := range f.hosts {
				if r, ok := rs[h.name]; !ok || r.Capacity == 0 || !r.MemoryKnown() || h != roomy && r.FreeMemory > tight {
					return false
				}
			}
			return rs[roomy.name].FreeMemory > 2*heavy.PeakRSSP90
		})
		f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h != nil })
		for name, r := range f.rooms(t, st) {
			t.Logf("%s: capacity %d, %s free", name, r.Capacity, bytesize.Format(r.FreeMemory))
		}

		heavies := f.enqueueNamed(3, "heavy", 2*time.Second, heavyMem)
		f.waitFor(time.Minute, "the heavy jobs completed", func() bool { all, _ := f.jobsDone(""); return all == 16 })
		for id, on := range f.ranOn(t, st, heavies) {
			assert.Equal(t, roomy.name, on, "heavy job %d ran on the host with room for it", id)
		}
		for _, h := range f.hosts {
			require.NoError(t, h.stop(30*time.Second))
		}
		checkFleetServed(t, f, max)
	})
	t.Run("policy estimate", func(t *testing.T) {
		const max = 4
		f := newSharedFleetOn(t, pgtest.Start(t), max, []string{"--spare", "0", "--memory-estimate", "1GiB"}, "alpha", "beta", "gamma")
		const tight = 512 << 20
		for _, h := range f.hosts[:2] {
			h.leaveFree(t, tight)
		}
		for _, h := range f.hosts {
			h.start()
		}
		st := f.open()
		roomy := f.hosts[2]
		f.waitFor(time.Minute, "every host published its room", func() bool {
			rs := f.rooms(t, st)
			for _, h := range f.hosts {
				if _, ok := rs[h.name]; !ok {
					return false
				}
			}
			return rs[roomy.name].Capacity == max
		})
		f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h != nil })
		for name, r := range f.rooms(t, st) {
			t.Logf("%s: capacity %d, %s free", name, r.Capacity, bytesize.Format(r.FreeMemory))
		}
		ids := f.enqueueNamed(3, "never-seen", 2*time.Second, 4<<20)
		f.waitFor(time.Minute, "the jobs completed", func() bool { all, _ := f.jobsDone(""); return all == 3 })
		for _, h := range f.hosts {
			require.NoError(t, h.stop(30*time.Second))
		}
		checkFleetServed(t, f, max)
		for id, on := range f.ranOn(t, st, ids) {
			assert.Equal(t, roomy.name, on, "job %d (no weight yet: the policy's 1GiB) ran on the host with room for it", id)
		}
	})
}

// TestFleetPolicyHostJoinsAndLeaves: a fourth host joins mid-run and takes
// jobs; a host stopped with SIGTERM mid-run leaves its busy runners to
// their jobs: every job completes with it gone, and when it comes back it
// concludes them, nothing left.
func TestFleetPolicyHostJoinsAndLeaves(t *testing.T) {
	const max, n = 6, 60
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	st := f.open()
	f.enqueueShared(n, time.Second)
	f.waitFor(2*time.Minute, "jobs under way", func() bool { all, _ := f.jobsDone(""); return all >= 10 })

	joined := time.Now()
	delta := f.addHost("delta")
	delta.start()
	f.waitFor(time.Minute, "delta ran a job", func() bool {
		for _, j := range f.fake.Jobs() {
			if j.Status == "completed" && f.runnerHostName(t, st, j.RunnerName) == delta.name {
				return true
			}
		}
		return false
	})
	t.Logf("delta's first job done %s after it joined", time.Since(joined).Round(100*time.Millisecond))

	leaver := f.hosts[1]
	f.waitFor(time.Minute, "beta busy", func() bool { return len(leaver.runnerProcesses()) > 0 })
	require.NoError(t, leaver.stop(time.Minute))
	left := len(leaver.runnerProcesses())
	t.Logf("beta stopped with SIGTERM, %d runner processes left to their jobs", left)

	f.waitFor(2*time.Minute, "every job completed with beta gone", func() bool { all, _ := f.jobsDone(""); return all == n })
	leaver.start()
	prefix := rm.RunnerNamePrefix(f.hostID(t, st, leaver.name))
	f.waitFor(time.Minute, "beta back and its runners' attempts concluded", func() bool {
		as, err := st.Attempts(context.Background(), store.AttemptFilter{Policy: f.fleetPolicy(t, st).ID, States: []rm.AttemptState{rm.StateBusy}})
		require.NoError(t, err)
		for _, a := range as {
			if strings.HasPrefix(a.RunnerName, prefix) {
				return false
			}
		}
		return true
	})
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	t.Logf("jobs per host: %v", perHost)
	assert.Positive(t, perHost[delta.name], "the host that joined took jobs")
}

// TestFleetPolicy300Jobs is the fleet policy's goal run: 3 hosts, one
// fleet policy of max 12, 300 jobs of 200–500 ms: each served once, never
// more than max at once fleet-wide, none left. It logs the time, the jobs
// each host ran and the most each ran at once.
func TestFleetPolicy300Jobs(t *testing.T) {
	const max, n = 12, 300
	f := newSharedFleet(t, max, "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	st := f.open()
	f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h != nil })
	start := time.Now()
	for i := range n {
		f.fake.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{sharedLabel}, Duration: time.Duration(200+100*(i%4)) * time.Millisecond,
			MemoryBytes: 4 << 20, Name: fmt.Sprintf("shared-job-%d", i%5)})
	}
	f.waitFor(3*time.Minute, fmt.Sprintf("%d jobs completed", n), func() bool { all, _ := f.jobsDone(""); return all == n })
	took := time.Since(start)
	holder, _ := f.holderOf(t, st)
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	perHost := checkFleetServed(t, f, max)
	most := f.maxAtOncePerHost(t, st)
	t.Logf("%d jobs in %s (%.1f jobs/s), %s holding at the end; jobs per host %v; most at once %d fleet-wide, per host %v",
		n, took.Round(100*time.Millisecond), float64(n)/took.Seconds(), holder.name, perHost, maxAtOnce(f.fake.Jobs()), most)
	assert.Zero(t, perHost[""], "every job ran on a runner of a host of the fleet")
	assert.Len(t, perHost, 3, "every host ran jobs: %v", perHost)
}
