package fleetdemand

import (
	"cmp"
	"fmt"
	"slices"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/store"
)

// Ask is what the holder shares out: the fleet's demand and its hosts.
type Ask struct {
	Policy rm.PolicyID
	// Wanted is the jobs GitHub assigned to the scale set (running or
	// waiting for a runner).
	Wanted int
	// Spares is the warm spares the fleet keeps at most.
	Spares int
	// Pending is the jobs waiting, oldest first, as far as the session
	// names them (assigned ones need a runner now).
	Pending []rm.PendingJob
	// Rooms are the hosts that may be given work: heard from lately.
	Rooms []store.FleetRoom
	// Gone are rooms of hosts not heard from: their running jobs still
	// count, but nothing is placed on them.
	Gone []store.FleetRoom
	// Weigh is a job's expected peak memory, in bytes (its fleet weight,
	// or the policy's estimate).
	Weigh func(rm.PendingJob) uint64
}

// Capacity is what the holder tells GitHub: the hosts' capacities, the
// jobs still running on hosts not heard from, at most max.
func Capacity(max int, rooms, gone []store.FleetRoom) int {
	n := 0
	for _, r := range rooms {
		n += r.Capacity
	}
	for _, r := range gone {
		n += r.Busy
	}
	return min(n, max)
}

// slot is one host as placement fills it.
type slot struct {
	room   store.FleetRoom
	wanted int
	free   uint64 // memory left, if known
	warm   int    // warm workspace slots left
	spares int
	placed []store.FleetPlacement
}

func (s *slot) left() int { return s.room.Capacity - s.wanted }

// Place shares the fleet's demand out: each host keeps the jobs its
// runners run; jobs waiting go first to hosts with a runner listening
// (GitHub hands them to it anyway), then each to the host whose free
// memory best fits the job's expected peak, then the least loaded; the
// fleet's spares are spread over hosts with room. Every room gets a
// share, a zero one included, so that the shares written replace all
// before.
func Place(a Ask) []store.FleetShare {
	slots := make([]*slot, len(a.Rooms))
	running := 0
	for i, r := range a.Rooms {
		slots[i] = &slot{room: r, wanted: r.Busy, free: r.FreeMemory, warm: r.WarmFree}
		running += r.Busy
	}
	for _, r := range a.Gone {
		running += r.Busy
	}
	waiting := max(a.Wanted-running, 0)
	jobs := waitingJobs(a.Pending, waiting)

	// Runners already listening take the first jobs.
	for _, s := range slots {
		for k := 0; k < s.room.Idle && waiting > 0 && s.left() > 0; k++ {
			s.wanted++
			waiting--
			if len(jobs) > 0 {
				s.placed = append(s.placed, store.FleetPlacement{Job: jobs[0], Why: "a runner listening"})
				jobs = jobs[1:]
			}
		}
	}
	for ; waiting > 0; waiting-- {
		var job rm.PendingJob
		named := len(jobs) > 0
		if named {
			job, jobs = jobs[0], jobs[1:]
		}
		w := uint64(0)
		if a.Weigh != nil {
			w = a.Weigh(job)
		}
		s, why := best(slots, w)
		if s == nil {
			break // no host has room: GitHub holds the rest (capacity told)
		}
		s.wanted++
		if s.room.MemoryKnown() {
			s.free -= min(s.free, w)
		}
		s.warm = max(s.warm-1, 0)
		if named {
			s.placed = append(s.placed, store.FleetPlacement{Job: job, Why: why})
		}
	}
	spread(slots, a.Spares)

	out := make([]store.FleetShare, 0, len(slots))
	for _, s := range slots {
		out = append(out, store.FleetShare{Policy: a.Policy, Host: s.room.Host, Wanted: s.wanted, Spares: s.spares, Placed: s.placed})
	}
	slices.SortFunc(out, func(x, y store.FleetShare) int { return cmp.Compare(x.Host.String(), y.Host.String()) })
	return out
}

// waitingJobs is the first n jobs that wait for a runner, assigned ones
// first, each in its order.
func waitingJobs(pending []rm.PendingJob, n int) []rm.PendingJob {
	var out []rm.PendingJob
	for _, assigned := range []bool{true, false} {
		for _, j := range pending {
			if j.Assigned == assigned && len(out) < n {
				out = append(out, j)
			}
		}
	}
	return out
}

// best is the host for a job of expected peak w, and why: of hosts with a
// slot whose memory fits w, one where a warm workspace slot of the job's
// repository waits (its checkout and caches are there: docs/warm.md); then
// the one whose free memory fits w most tightly; then the least loaded;
// then the one with a runner listening. A job no host's memory
// fits goes where most is free (its admission will say why it waits).
func best(slots []*slot, w uint64) (*slot, string) {
	var fit, roomy *slot
	for _, s := range slots {
		if s.left() <= 0 {
			continue
		}
		if !s.room.MemoryKnown() || s.free >= w {
			if fit == nil || better(s, fit, w) {
				fit = s
			}
		}
		if roomy == nil || s.free > roomy.free {
			roomy = s
		}
	}
	warm := ""
	if fit != nil && fit.warm > 0 {
		warm = "a warm workspace slot here; "
	}
	switch {
	case fit != nil && !fit.room.MemoryKnown():
		return fit, warm + "least loaded"
	case fit != nil:
		return fit, warm + fmt.Sprintf("fits: %s free for %s expected", bytesize.Format(fit.free), bytesize.Format(w))
	case roomy != nil:
		return roomy, fmt.Sprintf("no host has %s free; most free here (%s)", bytesize.Format(w), bytesize.Format(roomy.free))
	}
	return nil, ""
}

// better reports whether s suits a job of w better than t.
func better(s, t *slot, w uint64) bool {
	if (s.warm > 0) != (t.warm > 0) {
		return s.warm > 0
	}
	if s.room.MemoryKnown() && t.room.MemoryKnown() && s.free != t.free {
		return s.free-w < t.free-w // the tightest fit leaves room for heavier jobs
	}
	ls, lt := load(s), load(t)
	if ls != lt {
		return ls < lt
	}
	if (s.room.Idle > 0) != (t.room.Idle > 0) {
		return s.room.Idle > 0
	}
	return s.room.Host.String() < t.room.Host.String()
}

// load is the share of a host's capacity its jobs take, in thousandths.
func load(s *slot) int {
	if s.room.Capacity <= 0 {
		return 1000
	}
	return s.wanted * 1000 / s.room.Capacity
}

// spread gives each spare to the host with room that has the fewest,
// then the most memory free.
func spread(slots []*slot, spares int) {
	for ; spares > 0; spares-- {
		var pick *slot
		for _, s := range slots {
			if s.room.Capacity <= 0 {
				continue
			}
			if pick == nil || s.spares < pick.spares || s.spares == pick.spares && s.free > pick.free {
				pick = s
			}
		}
		if pick == nil {
			return
		}
		pick.spares++
	}
}
