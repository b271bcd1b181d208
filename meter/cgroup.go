package meter

import (
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// WithGroups meters each attempt that g, a launcher that runs attempts in
// groups of their own (rm.GroupMeter: the native and vm launchers, where
// the host has cgroups), holds a group for from that group. Given several
// times, each launcher is asked in turn; an attempt no launcher holds a
// group for is metered from its process tree. A g that is also an
// rm.MemoryContainer is asked, before those of WithGroupMemory, for the
// kernel's word on an ended attempt's memory.
func WithGroups(g rm.GroupMeter) Option {
	return func(o *options) {
		o.groups = append(o.groups, g)
		if mc, ok := g.(rm.MemoryContainer); ok {
			o.groupMemory = append(o.groupMemory, mc)
		}
	}
}

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
	var in []string
	for _, g := range ms.groups {
		if s := g.CgroupsInUse(); s != "" {
			in = append(in, s)
		}
	}
	if len(in) > 0 {
		ms.log.Info("metering: each attempt from its cgroup (its runner's process tree where it has none)", "cgroups", strings.Join(in, "; "))
		return
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
roots:
	for i, r := range roots {
		for _, g := range ms.groups {
			if u, has := g.GroupUsage(r.attempt); has {
				usage[i] = platform.TreeUsage{RSSBytes: u.MemoryBytes, CPUTime: u.CPUTime}
				source[i] = rm.UsageFromCgroup
				present[i] = ms.running(g, r)
				continue roots
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

// running says whether a root metered from g's group still runs: the
// launcher's exit notification, else the process table.
func (ms *AttemptMeters) running(g rm.GroupMeter, r root) bool {
	if running, known := g.RunnerRunning(r.attempt, r.pid, r.start); known {
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
