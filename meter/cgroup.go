package meter

import (
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// Groups is what the meters read of a launcher that puts each attempt in
// a cgroup of its own (platform/native's Launcher): the group's usage, O(1)
// per attempt where the process table costs O(processes), and every
// process of the attempt counted, those that left the runner's tree
// (setsid, a double fork) included. An attempt without a group is metered
// from its runner's process tree, as without Groups.
type Groups interface {
	// GroupUsage reads the attempt's group now; false when it has none.
	GroupUsage(a rm.AttemptID) (platform.GroupUsage, bool)
	// GroupMemory is the kernel's word on the group's memory (its peak,
	// its limit, the processes it killed for going over); false without.
	GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool)
	// RunnerRunning says whether the runner (pid, start) still runs, from
	// the launcher's own exit notification; known is false for a runner
	// the launcher does not watch (the process table is asked then).
	RunnerRunning(a rm.AttemptID, pid int, start uint64) (running, known bool)
	// CgroupsInUse says where the groups are; "" when there are none.
	CgroupsInUse() string
}

// WithGroups meters each attempt that has a cgroup from it (see Groups).
func WithGroups(g Groups) Option { return func(o *options) { o.groups = g } }

// WithGroupMemory adds a launcher that holds each attempt's memory in a
// group of its own (the container launcher, in its container) to those
// asked, after WithGroups', for the kernel's word on an ended attempt's
// memory: one the OOM killer ended at its limit banks that limit as its
// peak.
func WithGroupMemory(mc rm.MemoryContainer) Option {
	return func(o *options) { o.memory = append(o.memory, mc) }
}

// logSource says once, at start, what the meters read.
func (ms *AttemptMeters) logSource() {
	if ms.groups != nil {
		if in := ms.groups.CgroupsInUse(); in != "" {
			ms.log.Info("metering: each attempt from its cgroup (its runner's process tree where it has none)", "cgroups", in)
			return
		}
	}
	ms.log.Info("metering: each attempt from its runner's process tree, in one look at the process table a pass (no cgroups: processes that leave the tree are not counted)")
}

// look samples every root: from its cgroup where it has one (O(1) each),
// the rest from one look at the process table. present says the root's
// runner still runs; ok is false when the process table was needed and
// could not be listed (then nothing is known).
func (ms *AttemptMeters) look(roots []root) (usage []platform.TreeUsage, source []string, present []bool, ok bool) {
	usage = make([]platform.TreeUsage, len(roots))
	source = make([]string, len(roots))
	present = make([]bool, len(roots))
	var rest []int
	for i, r := range roots {
		if ms.groups != nil {
			if u, has := ms.groups.GroupUsage(r.attempt); has {
				usage[i] = platform.TreeUsage{RSSBytes: u.MemoryBytes, CPUTime: u.CPUTime}
				source[i] = rm.UsageFromCgroup
				present[i] = ms.running(r)
				continue
			}
		}
		rest = append(rest, i)
	}
	if len(rest) == 0 {
		return usage, source, present, true
	}
	pids := make([]int, len(rest))
	for j, i := range rest {
		pids[j] = roots[i].pid
	}
	trees := ms.sample(pids)
	if trees == nil {
		return usage, source, present, false
	}
	for _, i := range rest {
		r := roots[i]
		u, in := trees[r.pid]
		usage[i], source[i] = u, rm.UsageFromProcessTree
		present[i] = in && (r.start == 0 || ms.alive(r.pid, r.start))
	}
	return usage, source, present, true
}

// running says whether a metered-by-group root's runner still runs: the
// launcher's exit notification, else the process table.
func (ms *AttemptMeters) running(r root) bool {
	if running, known := ms.groups.RunnerRunning(r.attempt, r.pid, r.start); known {
		return running
	}
	if r.start == 0 {
		_, err := platform.StartTime(r.pid)
		return err == nil
	}
	return ms.alive(r.pid, r.start)
}

// oomPeak is the group's peak when the kernel killed a process of it at
// its memory limit: the job needed at least that much, though the samples
// may have missed the last climb. 0 otherwise.
func (ms *AttemptMeters) oomPeak(a rm.AttemptID) uint64 {
	m, ok := rm.GroupMemory{}, false
	if ms.groups != nil {
		m, ok = ms.groups.GroupMemory(a)
	}
	for _, mc := range ms.memory {
		if ok {
			break
		}
		m, ok = mc.GroupMemory(a)
	}
	if !ok || m.OOMKills == 0 {
		return 0
	}
	return max(m.PeakBytes, m.LimitBytes)
}

// peakCounts says whether an ended attempt's peak is kept for its policy:
// it ran its job to the end (whatever the job's result), or the kernel
// killed it at its memory limit (the job needed more than the limit).
func peakCounts(o rm.Outcome) bool {
	return o.Kind == rm.CompletedJob || (o.Kind == rm.Failed && o.Reason == rm.OOMKilled)
}
