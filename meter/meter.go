// Package meter owns AttemptMeters: what each live runner attempt of this
// host uses (peak memory of its process tree, average and busiest CPU),
// the prompt notice of a runner process that exited, and the memory peaks
// of ended attempts, kept per policy across restarts for memory admission.
//
// Every SampleEvery, Run looks at the process tree of each live attempt of
// the host (store.Store.LiveAttempts), in one look at the process table
// (platform.SampleTrees), on a goroutine of its own, so a slow /proc never
// holds a reconcile loop. When an attempt ends, its report carries what the
// samples saw (Peek), and the reconcile pass tells the meters how it ended
// (Ended): the peak of an attempt that ran a job is kept for its policy
// (PeaksOf, ExpectedPeak), in the peaks file. The meters never read an
// outcome back from the journal.
//
// Where a launcher keeps each attempt in a cgroup of its own
// (rm.GroupMeter, WithGroups), the attempt is read from its group instead: O(1) per
// attempt, and every process it started counted, those that left the
// runner's tree included; its usage says which source it came from.
//
// The same look notices a live attempt whose runner process is gone and
// hands its policy to the caller, who nudges that policy's loop: the next
// pass concludes the attempt and frees its slot within seconds instead of
// at the next scheduled poll. The pass decides; a nudge only means "look
// now".
package meter

import (
	"context"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
)

// SampleEvery is how often each live attempt's process tree is sampled.
const SampleEvery = 2 * time.Second

// PeaksKept is how many of a policy's newest peaks are kept: enough for a
// stable high percentile, few enough to follow a job that grew.
const PeaksKept = 20

// announceAgain is how soon an exited runner whose attempt is still live is
// announced again: the 30-second floor of a target's own active polling.
const announceAgain = 30 * time.Second

// keepAfterLastSample is how long a meter outlives its attempt's last
// sample, waiting for the attempt report that takes it.
const keepAfterLastSample = 10 * time.Minute

// meter is one attempt's figures.
type meter struct {
	firstAt, lastAt time.Time
	// lastCPU is the tree's CPU total at the last look.
	lastCPU time.Duration
	// usedCPU adds up the increases of that total: a descendant that exits
	// takes its time out of the total, and new work after that must still
	// count.
	usedCPU time.Duration
	peakRSS uint64
	// lastRSS is the tree's memory at the last look.
	lastRSS        uint64
	peakMillicores uint32
	samples        uint32
	// goneAt is when its runner process was first seen gone (zero: not
	// gone), for the log line that says how long its slot took to free.
	goneAt time.Time
	// policy it ran for, when a pass sampled it (zero for a bare Record).
	policy rm.PolicyID
	// source is where its last sample came from (rm.UsageFrom…).
	source string
}

// millicores is CPU time over wall time, in thousandths of a CPU; false when
// there is no wall time or the figure does not fit.
func millicores(cpu, wall time.Duration) (uint32, bool) {
	if wall <= 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(max(cpu, 0).Microseconds()), 1000)
	if hi != 0 {
		return 0, false
	}
	v := lo / uint64(max(wall.Microseconds(), 1))
	if v > math.MaxUint32 {
		return 0, false
	}
	return uint32(v), true
}

// since is now - t, never negative.
func since(now, t time.Time) time.Duration { return max(now.Sub(t), 0) }

func addDuration(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

func (m *meter) usage() rm.AttemptUsage {
	avg, _ := millicores(m.usedCPU, since(m.lastAt, m.firstAt))
	return rm.AttemptUsage{
		PeakRSSBytes:      m.peakRSS,
		CPUAvgMillicores:  avg,
		CPUPeakMillicores: m.peakMillicores,
		Samples:           m.samples,
		Source:            m.source,
	}
}

// AttemptMeters holds the meters of this host's live attempts, keyed by
// attempt, and each policy's newest measured peaks. It is safe for
// concurrent use.
type AttemptMeters struct {
	mu     sync.Mutex
	meters map[rm.AttemptID]*meter
	// exited: live attempts whose runner process was seen gone, and when
	// that was last announced: again only after announceAgain, so an attempt
	// a pass cannot conclude yet (GitHub unreachable) does not pull every
	// poll forward, and one misread process table does not silence it for
	// good.
	exited map[rm.AttemptID]time.Time

	peaksMu   sync.Mutex
	peaks     datadir.Peaks
	peaksFile string

	// pass serialises SampleOnce: two looks never interleave their samples.
	pass sync.Mutex

	// What a pass looks at; tests replace them.
	sample func(pids []int) map[int]platform.TreeUsage
	alive  func(pid int, start uint64) bool
	now    func() time.Time
	log    *slog.Logger
	// groups meter the attempts they hold a cgroup for (cgroup.go).
	groups []rm.GroupMeter
	// memory are the launchers asked for an ended attempt's group memory:
	// the groups' (WithGroups), then WithGroupMemory's.
	memory []rm.MemoryContainer
	// observe is told of each pass's samples (WithObserver).
	observe func([]Sample)
}

// New returns meters whose ended attempts' peaks are kept in peaksFile, with
// those kept there before; "" keeps peaks in memory only. A peaks file that
// cannot be read is logged and the meters start with no peaks.
func New(peaksFile string, opts ...Option) *AttemptMeters {
	ms := &AttemptMeters{
		meters:    map[rm.AttemptID]*meter{},
		exited:    map[rm.AttemptID]time.Time{},
		peaks:     datadir.Peaks{Policies: map[string][]uint64{}},
		peaksFile: peaksFile,
		sample:    platform.SampleTrees,
		alive:     platform.Alive,
		now:       time.Now,
		log:       slog.Default(),
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.log != nil {
		ms.log = o.log
	}
	ms.groups, ms.memory, ms.observe = o.groups, append(o.groupMemory, o.memory...), o.observe
	ms.logSource()
	if peaksFile != "" {
		peaks, err := datadir.LoadPeaks(peaksFile, datadir.PeaksLogger(ms.log), datadir.PeaksAtMost(o.hostMemory))
		if err != nil {
			ms.log.Warn("the measured memory peaks could not be read: starting without them", "err", err)
		}
		if peaks.Policies != nil {
			ms.peaks = peaks
		}
	}
	return ms
}

// PeaksOf returns the policy's newest measured peaks in bytes, oldest first.
func (ms *AttemptMeters) PeaksOf(p rm.PolicyID) []uint64 {
	ms.peaksMu.Lock()
	defer ms.peaksMu.Unlock()
	return slices.Clone(ms.peaks.Policies[p.String()])
}

// ExpectedPeak is what admission expects a new attempt of policy p to peak
// at: the 90th percentile (nearest rank) of its banked peaks plus 10 %
// headroom, or estimate while none is banked. The percentile follows most
// jobs of a policy without letting one outlier hold a slot forever; the
// headroom covers a job slightly heavier than any seen.
func (ms *AttemptMeters) ExpectedPeak(p rm.PolicyID, estimate uint64) uint64 {
	peaks := ms.PeaksOf(p)
	if len(peaks) == 0 {
		return estimate
	}
	slices.Sort(peaks)
	rank := (9*len(peaks) + 9) / 10 // ⌈0.9 n⌉
	v := peaks[rank-1]
	if s := v + v/10; s >= v {
		return s
	}
	return math.MaxUint64
}

// CurrentRSS returns what the attempt's tree used at the last look, when it
// was sampled.
func (ms *AttemptMeters) CurrentRSS(a rm.AttemptID) (uint64, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.meters[a]
	if !ok {
		return 0, false
	}
	return m.lastRSS, true
}

// Peek returns what the attempt used so far, for live views (status, TUI,
// metrics) and for the report of an attempt that ended.
func (ms *AttemptMeters) Peek(a rm.AttemptID) (rm.AttemptUsage, bool) {
	oomPeak := ms.oomPeak(a) // the kernel's peak of a job killed at its limit
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.meters[a]
	if !ok {
		return rm.AttemptUsage{}, false
	}
	u := m.usage()
	u.PeakRSSBytes = max(u.PeakRSSBytes, oomPeak)
	return u, true
}

// Record adds one sample of the attempt's tree, taken at at. p is the
// policy it runs for; the zero PolicyID means none (its peak is never
// banked). A meter's policy is the one of its first sample.
func (ms *AttemptMeters) Record(a rm.AttemptID, p rm.PolicyID, at time.Time, u platform.TreeUsage) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.recordLocked(a, p, at, u)
}

func (ms *AttemptMeters) recordLocked(a rm.AttemptID, p rm.PolicyID, at time.Time, u platform.TreeUsage) {
	m, ok := ms.meters[a]
	if !ok {
		m = &meter{firstAt: at, lastAt: at, lastCPU: u.CPUTime, policy: p}
		ms.meters[a] = m
	}
	// A descendant that exited took its CPU time out of the total: only
	// increases count, from wherever the total now stands.
	increase := max(u.CPUTime-m.lastCPU, 0)
	if busy, ok := millicores(increase, since(at, m.lastAt)); ok {
		m.peakMillicores = max(m.peakMillicores, busy)
	}
	m.usedCPU = addDuration(m.usedCPU, increase)
	m.lastAt = at
	m.lastCPU = u.CPUTime
	m.peakRSS = max(m.peakRSS, u.RSSBytes)
	m.lastRSS = u.RSSBytes
	if m.samples < math.MaxUint32 {
		m.samples++
	}
	m.goneAt = time.Time{}
}

// SinceSeenGone returns how long ago the attempt's runner was first seen
// gone: up to SampleEvery less than since it exited. False when it was not.
func (ms *AttemptMeters) SinceSeenGone(a rm.AttemptID, now time.Time) (time.Duration, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.meters[a]
	if !ok || m.goneAt.IsZero() {
		return 0, false
	}
	return since(now, m.goneAt), true
}

// Ended is the reconcile pass telling the meters that attempt a ended
// with outcome o (its report already carries Peek's usage). When o is
// CompletedJob, the attempt's peak is kept for its policy and its meter
// goes; an idle exit or a failure says nothing of the jobs' weight: its
// meter stays until forgotten as stale, so a later correction to
// CompletedJob (GitHub's word on a job that came after the conclusion)
// still keeps its peak. Each peak is kept once.
func (ms *AttemptMeters) Ended(a rm.AttemptID, o rm.Outcome) {
	oomPeak := ms.oomPeak(a)
	ms.mu.Lock()
	m, ok := ms.meters[a]
	if !ok {
		ms.mu.Unlock()
		return
	}
	m.peakRSS = max(m.peakRSS, oomPeak)
	if !peakCounts(o) {
		ms.mu.Unlock()
		return
	}
	delete(ms.meters, a)
	delete(ms.exited, a)
	ms.mu.Unlock()
	// CompletedJob is the runner finishing its job, whatever the job's own
	// result (an out-of-memory build included), and Failed(OOMKilled) a
	// job killed at its limit: its peak is the job's need.
	if m.policy.IsZero() || m.peakRSS == 0 {
		return
	}
	ms.bankPeak(m.policy, m.peakRSS)
	if ms.peaksFile != "" {
		if err := datadir.SavePeaks(ms.peaksFile, ms.peaksCopy()); err != nil {
			ms.log.Warn("the measured memory peaks could not be kept", "err", err)
		}
	}
}

// ForgetStale forgets meters not sampled for 10 minutes and not in live: an
// attempt whose report never took its usage.
func (ms *AttemptMeters) ForgetStale(live map[rm.AttemptID]bool, now time.Time) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.forgetStaleLocked(live, now)
}

func (ms *AttemptMeters) forgetStaleLocked(live map[rm.AttemptID]bool, now time.Time) {
	for a, m := range ms.meters {
		if !live[a] && since(now, m.lastAt) >= keepAfterLastSample {
			delete(ms.meters, a)
		}
	}
}

func (ms *AttemptMeters) bankPeak(p rm.PolicyID, peak uint64) {
	ms.peaksMu.Lock()
	defer ms.peaksMu.Unlock()
	key := p.String()
	kept := append(ms.peaks.Policies[key], peak)
	if len(kept) > PeaksKept {
		kept = slices.Clone(kept[len(kept)-PeaksKept:])
	}
	ms.peaks.Policies[key] = kept
}

func (ms *AttemptMeters) peaksCopy() datadir.Peaks {
	ms.peaksMu.Lock()
	defer ms.peaksMu.Unlock()
	c := datadir.Peaks{Policies: make(map[string][]uint64, len(ms.peaks.Policies))}
	for k, v := range ms.peaks.Policies {
		c.Policies[k] = slices.Clone(v)
	}
	return c
}

// root is one live attempt's runner process, as the journal has it.
type root struct {
	attempt rm.AttemptID
	pid     int
	start   uint64
	policy  rm.PolicyID
}

// SampleOnce is one pass: it samples every live attempt of host that has
// a process, and returns the policies of the attempts whose runner process
// is newly seen gone (or gone and last announced 30 s ago). A process is
// gone when it is not in the process table, or, when the journal has its
// start stamp, when (pid, start) is no longer a running process (a reused
// pid, an exited child not yet reaped). A journal that cannot be read
// leaves everything as it was: nothing is sampled, announced or
// forgotten. Blocking: the journal and the process table.
func (ms *AttemptMeters) SampleOnce(st rm.LiveAttempts, host rm.HostID) []rm.PolicyID {
	ms.pass.Lock()
	defer ms.pass.Unlock()
	attempts, err := st.LiveAttempts(context.Background(), host)
	if err != nil {
		ms.log.Warn("metering: the journal's live attempts could not be read", "err", err)
		return nil
	}
	live := make(map[rm.AttemptID]bool, len(attempts))
	var roots []root
	for _, a := range attempts {
		live[a.ID] = true
		if a.PID > 0 {
			roots = append(roots, root{a.ID, a.PID, a.ProcessStart, a.Policy})
		}
	}

	// Each attempt's cgroup, and one look at the process table for those
	// without (an idle host costs no look at the table).
	usage, source, present, known := ms.look(roots)
	if !known {
		// The table could not be listed: nothing is known, no runner is gone.
		ms.log.Warn("metering: the process table could not be read")
	}
	now := ms.now()

	var (
		exited  []rm.PolicyID
		sampled []Sample
	)
	func() {
		ms.mu.Lock()
		defer ms.mu.Unlock()
		for a := range ms.exited {
			if !live[a] {
				delete(ms.exited, a)
			}
		}
		if !known {
			return
		}
		for i, r := range roots {
			if !present[i] {
				if m, ok := ms.meters[r.attempt]; ok && m.goneAt.IsZero() {
					m.goneAt = now
				}
				at, seen := ms.exited[r.attempt]
				if !seen || since(now, at) >= announceAgain {
					ms.exited[r.attempt] = now
					// A repeated policy is harmless: a nudge is one permit.
					exited = append(exited, r.policy)
				}
				continue
			}
			delete(ms.exited, r.attempt)
			ms.recordLocked(r.attempt, r.policy, now, usage[i])
			m := ms.meters[r.attempt]
			m.source = source[i]
			if ms.observe != nil {
				sampled = append(sampled, Sample{Attempt: r.attempt, Policy: r.policy, At: now,
					RSSBytes: m.lastRSS, CPUUsed: m.usedCPU, Usage: m.usage()})
			}
		}
	}()
	ms.ForgetStale(live, now)
	if ms.observe != nil && known {
		ms.observe(sampled)
	}
	return exited
}

// Run samples host's attempts every SampleEvery, from now, while wanted
// says so (nil: always), and hands exited the policies whose runner
// process just went away. Each pass runs on a goroutine of its own; a pass that
// panics loses one sample, nothing more. Passes never overlap: a slow one
// delays the next. Run returns when ctx ends, without waiting for a pass in
// progress.
func (ms *AttemptMeters) Run(ctx context.Context, st rm.LiveAttempts, host rm.HostID, wanted func() bool, exited func(rm.PolicyID)) {
	ticks := time.NewTicker(SampleEvery)
	defer ticks.Stop()
	for {
		if wanted == nil || wanted() {
			gone, ok := ms.runPass(ctx, st, host)
			if !ok {
				return
			}
			if exited != nil {
				for _, p := range gone {
					exited(p)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks.C:
		}
	}
}

// runPass runs SampleOnce on a goroutine; false when ctx ended first.
func (ms *AttemptMeters) runPass(ctx context.Context, st rm.LiveAttempts, host rm.HostID) ([]rm.PolicyID, bool) {
	result := make(chan []rm.PolicyID, 1)
	go func() {
		var gone []rm.PolicyID
		defer func() {
			if r := recover(); r != nil {
				ms.log.Error("metering: a pass panicked; one sample is lost", "panic", r)
			}
			result <- gone
		}()
		gone = ms.SampleOnce(st, host)
	}()
	select {
	case gone := <-result:
		return gone, true
	case <-ctx.Done():
		return nil, false
	}
}
