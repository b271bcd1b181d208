package fleetdemand_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/fleetdemand"
	"github.com/runner-manager/runner-manager/store"
)

const gib = 1 << 30

var (
	hostA = rm.NewHostID()
	hostB = rm.NewHostID()
	hostC = rm.NewHostID()
	pol   = rm.NewPolicyID()
)

func room(h rm.HostID, capacity, busy, idle int, free uint64) store.FleetRoom {
	return store.FleetRoom{Policy: pol, Host: h, Capacity: capacity, Busy: busy, Idle: idle, FreeMemory: free}
}

func warmRoom(h rm.HostID, capacity int, free uint64, warm int) store.FleetRoom {
	r := room(h, capacity, 0, 0, free)
	r.WarmFree = warm
	return r
}

// wanted is each host's Wanted and Spares, by host.
func wanted(shares []store.FleetShare) map[rm.HostID][2]int {
	out := map[rm.HostID][2]int{}
	for _, s := range shares {
		out[s.Host] = [2]int{s.Wanted, s.Spares}
	}
	return out
}

func TestPlace(t *testing.T) {
	heavy := rm.PendingJob{ID: "heavy", Name: "build", Assigned: true}
	light := rm.PendingJob{ID: "light", Name: "lint", Assigned: true}
	weigh := func(j rm.PendingJob) uint64 {
		if j.ID == "heavy" {
			return 6 * gib
		}
		return gib
	}
	for _, c := range []struct {
		name string
		ask  fleetdemand.Ask
		want map[rm.HostID][2]int
		why  map[string]rm.HostID // job id → host it went to
		// warmFirst: every placement the warm slots decided says so.
		warmFirst bool
	}{{
		name: "a heavy job goes to the one host whose memory fits it",
		ask: fleetdemand.Ask{Wanted: 1, Pending: []rm.PendingJob{heavy},
			Rooms: []store.FleetRoom{room(hostA, 4, 0, 0, 2*gib), room(hostB, 4, 0, 0, 8*gib), room(hostC, 4, 0, 0, 3*gib)}},
		want: map[rm.HostID][2]int{hostA: {0, 0}, hostB: {1, 0}, hostC: {0, 0}},
		why:  map[string]rm.HostID{"heavy": hostB},
	}, {
		name: "the tightest fit keeps the roomy host for heavy jobs",
		ask: fleetdemand.Ask{Wanted: 2, Pending: []rm.PendingJob{light, heavy},
			Rooms: []store.FleetRoom{room(hostA, 4, 0, 0, 2*gib), room(hostB, 4, 0, 0, 8*gib)}},
		want: map[rm.HostID][2]int{hostA: {1, 0}, hostB: {1, 0}},
		why:  map[string]rm.HostID{"light": hostA, "heavy": hostB},
	}, {
		name: "running jobs stay; a listening runner takes the next",
		ask: fleetdemand.Ask{Wanted: 3, Pending: []rm.PendingJob{light},
			Rooms: []store.FleetRoom{room(hostA, 4, 2, 0, 8*gib), room(hostB, 4, 0, 1, 2*gib)}},
		want: map[rm.HostID][2]int{hostA: {2, 0}, hostB: {1, 0}},
		why:  map[string]rm.HostID{"light": hostB},
	}, {
		name: "a full host gets nothing; the rest go elsewhere",
		ask: fleetdemand.Ask{Wanted: 3,
			Rooms: []store.FleetRoom{room(hostA, 0, 0, 0, 0), room(hostB, 2, 0, 0, 8*gib), room(hostC, 2, 0, 0, 6*gib)}},
		want: map[rm.HostID][2]int{hostA: {0, 0}, hostB: {1, 0}, hostC: {2, 0}},
	}, {
		name: "every host full: nothing placed, GitHub holds them",
		ask: fleetdemand.Ask{Wanted: 5,
			Rooms: []store.FleetRoom{room(hostA, 1, 1, 0, 0), room(hostB, 0, 0, 0, 0)}},
		want: map[rm.HostID][2]int{hostA: {1, 0}, hostB: {0, 0}},
	}, {
		name: "a host gone quiet keeps its running jobs counted and gets nothing new",
		ask: fleetdemand.Ask{Wanted: 3, Gone: []store.FleetRoom{room(hostC, 4, 2, 0, 8*gib)},
			Rooms: []store.FleetRoom{room(hostA, 4, 0, 0, 8*gib)}},
		want: map[rm.HostID][2]int{hostA: {1, 0}},
	}, {
		name: "spares are spread over hosts with room",
		ask: fleetdemand.Ask{Wanted: 0, Spares: 3,
			Rooms: []store.FleetRoom{room(hostA, 2, 0, 0, 8*gib), room(hostB, 2, 0, 0, 4*gib), room(hostC, 0, 0, 0, 0)}},
		want: map[rm.HostID][2]int{hostA: {0, 2}, hostB: {0, 1}, hostC: {0, 0}},
	}, {
		name: "a job goes where a warm slot of its repository waits, if its memory fits",
		ask: fleetdemand.Ask{Wanted: 3, Pending: []rm.PendingJob{light, {ID: "second", Assigned: true}, heavy},
			Rooms: []store.FleetRoom{room(hostA, 4, 0, 0, 8*gib), warmRoom(hostB, 4, 8*gib, 1), warmRoom(hostC, 4, 2*gib, 3)}},
		want: map[rm.HostID][2]int{hostA: {0, 0}, hostB: {1, 0}, hostC: {2, 0}},
		// light: C's slots are warm and it fits tightest; second: C again;
		// heavy: only A and B fit 6 GiB, and B has a warm slot.
		why:       map[string]rm.HostID{"light": hostC, "second": hostC, "heavy": hostB},
		warmFirst: true,
	}, {
		name: "hosts that check no memory: the least loaded",
		ask: fleetdemand.Ask{Wanted: 2,
			Rooms: []store.FleetRoom{room(hostA, 4, 1, 0, store.FreeMemoryUnknown), room(hostB, 4, 0, 0, store.FreeMemoryUnknown)}},
		want: map[rm.HostID][2]int{hostA: {1, 0}, hostB: {1, 0}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			c.ask.Policy, c.ask.Weigh = pol, weigh
			shares := fleetdemand.Place(c.ask)
			assert.Equal(t, c.want, wanted(shares))
			placed := map[string]rm.HostID{}
			for _, s := range shares {
				assert.Equal(t, pol, s.Policy)
				for _, p := range s.Placed {
					placed[p.Job.ID] = s.Host
					assert.NotEmpty(t, p.Why)
					if c.warmFirst {
						assert.Contains(t, p.Why, "a warm workspace slot here", p.Job.ID)
					}
				}
			}
			if c.why != nil {
				assert.Equal(t, c.why, placed)
			}
		})
	}
}

func TestCapacity(t *testing.T) {
	rooms := []store.FleetRoom{room(hostA, 3, 1, 0, 0), room(hostB, 2, 0, 0, 0)}
	gone := []store.FleetRoom{room(hostC, 4, 2, 0, 0)}
	assert.Equal(t, 7, fleetdemand.Capacity(10, rooms, gone), "the hosts' capacities and the jobs a quiet host still runs")
	assert.Equal(t, 4, fleetdemand.Capacity(4, rooms, gone), "at most max")
	assert.Equal(t, 0, fleetdemand.Capacity(4, nil, nil))
}
