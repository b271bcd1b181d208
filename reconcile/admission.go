package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// MemorySource tells the host's memory: an rm.Machine is one (the real
// one is platform.Machine); tests fake a small machine.
type MemorySource interface {
	Memory() (total, available uint64, err error)
}

// DefaultMaxSpares is the host's bound on warm spares, all policies
// together, when Admission.MaxSpares is 0: spares hold memory and
// registrations for jobs that may not come, and memory admission alone
// would let a big host keep dozens.
const DefaultMaxSpares = 8

// Refusal says why admission refused a launch: a Reason (status.RefusedMemory,
// status.RefusedDisk, status.RefusedMax) and a Detail with the figures.
type Refusal struct {
	Reason string
	Detail string
	// HostTooSmall: the candidate's expected peak exceeds what the host
	// admits even with nothing else running. Such a candidate is admitted
	// when nothing else runs (one at a time), with this refusal as its
	// note, so learned data alone never stalls a policy for good.
	HostTooSmall bool
}

func (r Refusal) String() string { return r.Reason + ": " + r.Detail }

// Admission decides whether the host can hold one more runner (DESIGN.md
// §6). A candidate of policy P is admitted while
//
//	Σ over the host's live attempts of max(current RSS, expected peak of its policy)
//	  + expected(P) ≤ total memory − Reserve,
//
// the data directory's filesystem has at least DiskFloor free, P has
// fewer than Max live attempts, and the host runs fewer than MaxJobs jobs
// (when set). expected(P) is the meters' ExpectedPeak of
// P's banked peaks, else P's MemoryEstimate, else DefaultEstimate.
//
// A P whose expected(P) alone exceeds total − Reserve would never be
// admitted, and the capacity told to GitHub would stay 0 until a smaller
// peak is learned, which takes a job that cannot run: such a P is
// admitted when nothing else runs on the host (nothing committed), one at
// a time, and refused with a HostTooSmall refusal otherwise.
//
// One Admission serves every loop of a host: it serializes their decisions,
// and the loop writes the admitted attempts' journal rows before the next
// decision reads the journal, so two loops never spend the same memory.
type Admission struct {
	// Memory is the host's memory; nil skips the memory check.
	Memory MemorySource
	// Reserve is kept for the system and everything else.
	Reserve uint64
	// DiskFree reports the free bytes of the filesystem holding DiskPath;
	// nil skips the disk check.
	DiskFree  func(path string) (uint64, error)
	DiskPath  string
	DiskFloor uint64
	// Reclaim, when set, is asked to free need bytes of the disk before a
	// launch is refused for it, and returns what it freed: the daemon
	// gives the workspace slots' eviction (warm.Pool.Reclaim), so slots
	// no attempt holds go, least recently used first, before a job waits
	// for space they hold. The disk is read again after it freed anything.
	Reclaim func(need uint64) uint64
	// DefaultEstimate is the expected peak of a policy with no estimate and
	// no measured peak; 0 means DefaultMemoryEstimate.
	DefaultEstimate uint64
	// MaxSpares bounds the host's warm spares, all policies together (0:
	// DefaultMaxSpares; -1: none at all).
	MaxSpares int
	// MaxJobs bounds the host's jobs at once, all policies together, host
	// and fleet ones alike (0: no bound). A job is a live attempt that is
	// not a warm spare; the spares count too when one is admitted, as a
	// spare beyond the bound could not take a job.
	MaxJobs int

	mu sync.Mutex // held by a session: one decision at a time, host-wide
	// seen are the policies the loops' passes last read, by id (under
	// mu): a session counts another loop's live attempts with its policy
	// as that loop's last pass read it, instead of reading the journal
	// once per policy per pass (10 policies with a warm spare each made
	// 90 policy reads a minute on an idle host).
	seen map[rm.PolicyID]rm.Policy

	statMu sync.Mutex
	last   status.Memory
}

// Ask is one admission question with its figures.
type Ask struct {
	// TotalMemory is 0 when the memory is not checked.
	TotalMemory uint64
	// Committed is Σ over live attempts of max(current RSS, expected peak).
	Committed uint64
	// Expected is the candidate's expected peak.
	Expected uint64
	// DiskFree is checked when DiskKnown.
	DiskFree  uint64
	DiskKnown bool
	// Live and Max are the candidate policy's.
	Live, Max int
	// Jobs is the host's jobs at once, all policies together: checked
	// against Admission.MaxJobs.
	Jobs int
}

// Decide answers one question: admitted, or the refusal and its figures.
func (a *Admission) Decide(q Ask) (Refusal, bool) {
	if q.Live >= q.Max {
		return Refusal{Reason: status.RefusedMax, Detail: fmt.Sprintf("%d live of max %d", q.Live, q.Max)}, false
	}
	if a.MaxJobs > 0 && q.Jobs >= a.MaxJobs {
		return Refusal{Reason: status.RefusedMaxJobs, Detail: fmt.Sprintf("host max_jobs %d: %d jobs at once on this host", a.MaxJobs, q.Jobs)}, false
	}
	if q.DiskKnown && q.DiskFree < a.DiskFloor {
		return Refusal{Reason: status.RefusedDisk, Detail: fmt.Sprintf("%s free on %s, below the floor of %s; free some space or lower the floor",
			bytesize.Format(q.DiskFree), a.DiskPath, bytesize.Format(a.DiskFloor))}, false
	}
	if q.TotalMemory > 0 {
		limit := sub(q.TotalMemory, a.Reserve)
		if q.Expected > limit && limit > 0 {
			r := Refusal{Reason: status.RefusedMemory, HostTooSmall: true, Detail: fmt.Sprintf(
				"its jobs need ~%s, this host admits %s at most (%s total − %s reserve): one runs at a time, when nothing else does",
				bytesize.Format(q.Expected), bytesize.Format(limit), bytesize.Format(q.TotalMemory), bytesize.Format(a.Reserve))}
			return r, q.Committed == 0
		}
		if q.Committed+q.Expected > limit {
			return Refusal{Reason: status.RefusedMemory, Detail: fmt.Sprintf("%s committed + %s expected > %s (%s total − %s reserve)",
				bytesize.Format(q.Committed), bytesize.Format(q.Expected), bytesize.Format(limit),
				bytesize.Format(q.TotalMemory), bytesize.Format(a.Reserve))}, false
		}
	}
	return Refusal{}, true
}

// Capacity is how many runners the policy may have now: its live ones plus
// as many more of the expected size as Decide would admit one after the
// other, at most Max. It is what scale-set mode reports as maxCapacity.
func (a *Admission) Capacity(q Ask) int {
	n := q.Live
	for n < q.Max {
		if _, ok := a.Decide(q); !ok {
			break
		}
		q.Committed += q.Expected
		q.Live++
		q.Jobs++
		n++
	}
	return n
}

// Status is the host's memory and disk as the last decision saw them.
func (a *Admission) Status() status.Memory {
	a.statMu.Lock()
	defer a.statMu.Unlock()
	st := a.last
	n := a.maxSpares()
	st.MaxSpares = &n
	return st
}

func (a *Admission) defaultEstimate() uint64 {
	if a.DefaultEstimate > 0 {
		return a.DefaultEstimate
	}
	return DefaultMemoryEstimate
}

// expectedPeak is what a new attempt of p is expected to peak at.
func (a *Admission) expectedPeak(m rm.Meters, p rm.Policy) uint64 { return a.ExpectedPeak(m, p) }

// ExpectedPeak is what admission, with meters m (nil: none), expects a new
// attempt of p to peak at: from its banked peaks, else its MemoryEstimate,
// else DefaultEstimate. The container backend limits the containers of a
// policy that sets no limit from it.
func (a *Admission) ExpectedPeak(m rm.Meters, p rm.Policy) uint64 {
	est := p.MemoryEstimate
	if est == 0 {
		est = a.defaultEstimate()
	}
	if m == nil {
		return est
	}
	return m.ExpectedPeak(p.ID, est)
}

// admitDeps is what a session reads to sum the host's commitments.
type admitDeps struct {
	st     store.Store
	host   rm.HostID
	meters rm.Meters
	tab    *table
	// policies are those the calling pass read already; the policies of
	// other loops' live attempts are those their passes read last, else
	// read from st.
	policies map[rm.PolicyID]*rm.Policy
}

// policy returns the policy of a live attempt: the pass's, else the
// journal's. A policy gone from the journal is counted with the default
// estimate.
func (d admitDeps) policy(ctx context.Context, seen map[rm.PolicyID]rm.Policy, id rm.PolicyID) (*rm.Policy, error) {
	if p := d.policies[id]; p != nil {
		return p, nil
	}
	if p, ok := seen[id]; ok {
		return &p, nil
	}
	p, err := d.st.Policy(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		p = rm.Policy{ID: id}
	} else if err != nil {
		return nil, err
	}
	return &p, nil
}

// session is one loop's turn at admission: the host's figures read once,
// then candidates decided one after the other, each admitted one committed
// before the next. The loop records the admitted attempts' rows before end.
type session struct {
	a         *Admission
	total     uint64
	memErr    error
	diskFree  uint64
	diskKnown bool
	diskErr   error
	committed uint64
	// gone are the live attempts left out of committed because their
	// process has exited: a pass that saw them still running must not count
	// them as live either, or its capacity overcounts by one.
	gone map[rm.AttemptID]bool
	// spares: the warm spares' part of committed, and each spare, which
	// yields its memory to a job (spares_admission.go).
	spareCommitted uint64
	spares         []spareMem
	// spareCount is the host's live spares, yielding ones too, and those
	// admitted in the session: against Admission.MaxSpares.
	spareCount int
	// jobs is the host's live attempts that are not spares, and those
	// admitted in the session: against Admission.MaxJobs.
	jobs int
	tab  *table
}

// begin locks admission host-wide and reads the figures: host memory, disk
// free, and the commitments of every live attempt of the host's policies
// whose process has not exited.
func (a *Admission) begin(ctx context.Context, d admitDeps) (*session, error) {
	a.mu.Lock()
	if a.seen == nil {
		a.seen = make(map[rm.PolicyID]rm.Policy)
	}
	for id, p := range d.policies {
		a.seen[id] = *p
	}
	s := &session{a: a, tab: d.tab}
	if a.Memory != nil {
		total, _, err := a.Memory.Memory()
		if err != nil {
			s.memErr = err
		}
		s.total = total
	}
	if a.DiskFree != nil {
		free, err := a.DiskFree(a.DiskPath)
		if err != nil {
			s.diskErr = err
		} else {
			s.diskFree, s.diskKnown = a.reclaim(free), true
		}
	}
	live, err := liveAttemptsOf(ctx, d.st, d.host)
	if err != nil {
		a.mu.Unlock()
		return nil, fmt.Errorf("admission: read the host's live attempts: %w", err)
	}
	expected := make(map[rm.PolicyID]uint64)
	for _, at := range live {
		if d.tab.exited(at.ID) {
			if s.gone == nil {
				s.gone = make(map[rm.AttemptID]bool)
			}
			s.gone[at.ID] = true
			continue // its memory is free; it only waits to be concluded
		}
		exp, ok := expected[at.Policy]
		if !ok {
			p, err := d.policy(ctx, a.seen, at.Policy)
			if err != nil {
				a.mu.Unlock()
				return nil, fmt.Errorf("admission: read the policy of attempt %s: %w", at.ID, err)
			}
			exp = a.expectedPeak(d.meters, *p)
			expected[at.Policy] = exp
		}
		c := exp
		spare, cost, yieldable := s.spareCost(at)
		if spare {
			c = cost
		}
		if d.meters != nil {
			if rss, ok := d.meters.CurrentRSS(at.ID); ok && rss > c {
				c = rss
			}
		}
		s.committed += c
		if spare {
			s.spareCount++
		} else {
			s.jobs++
		}
		if yieldable {
			s.addSpare(at.ID, c)
		}
	}
	a.statMu.Lock()
	avail := uint64(0)
	if a.Memory != nil && s.memErr == nil {
		_, avail, _ = a.Memory.Memory()
	}
	a.last = status.Memory{
		TotalBytes: s.total, AvailableBytes: avail, ReserveBytes: a.Reserve,
		CommittedBytes: s.committed, SpareBytes: s.spareCommitted, Runners: s.jobs, Spares: s.spareCount,
		DiskFreeBytes: s.diskFree, DiskFloorBytes: a.DiskFloor,
	}
	a.statMu.Unlock()
	return s, nil
}

// reclaim asks Reclaim for what the disk lacks below the floor, and
// returns the free bytes then.
func (a *Admission) reclaim(free uint64) uint64 {
	if a.Reclaim == nil || free >= a.DiskFloor {
		return free
	}
	if a.Reclaim(a.DiskFloor-free) == 0 {
		return free
	}
	if again, err := a.DiskFree(a.DiskPath); err == nil {
		return again
	}
	return free
}

func (s *session) ask(expected uint64, live, max int) Ask {
	return Ask{TotalMemory: s.total, Committed: s.committed, Expected: expected,
		DiskFree: s.diskFree, DiskKnown: s.diskKnown, Live: live, Max: max, Jobs: s.jobs}
}

// admit decides one candidate and, when admitted, commits its expected peak.
func (s *session) admit(expected uint64, live, max int) (Refusal, bool) {
	if s.memErr != nil {
		return Refusal{Reason: status.RefusedMemory, Detail: "cannot read the host's memory: " + s.memErr.Error()}, false
	}
	if s.diskErr != nil {
		return Refusal{Reason: status.RefusedDisk, Detail: fmt.Sprintf("cannot read the free space of %s: %v", s.a.DiskPath, s.diskErr)}, false
	}
	q := s.ask(expected, live, max)
	q.Committed -= s.spareCommitted // spares yield: a job is decided without them
	r, ok := s.a.Decide(q)
	if ok {
		s.committed += expected
		s.jobs++
		s.yieldSpares()
	}
	return r, ok
}

// capacity is the admitted capacity of a policy with live attempts.
func (s *session) capacity(expected uint64, live, max int) int {
	if s.memErr != nil || s.diskErr != nil {
		return min(live, max)
	}
	return s.a.Capacity(s.ask(expected, live, max))
}

func (s *session) end() {
	s.a.statMu.Lock()
	s.a.last.CommittedBytes = s.committed
	s.a.last.SpareBytes = s.spareCommitted
	s.a.last.Runners, s.a.last.Spares = s.jobs, s.spareCount
	s.a.statMu.Unlock()
	s.a.mu.Unlock()
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// noteFit keeps a policy's HostTooSmall refusal as its last refusal,
// logged and counted once per change, from every admission answer the
// capacity computation gets: in scale-set mode GitHub is told the capacity
// and sends no demand beyond it, so a policy that does not fit may never
// ask for a launch, and its refusal must show all the same. Once the policy
// fits again the refusal is dropped, and that is logged too.
func (p *pass) noteFit(pol *rm.Policy, r Refusal) {
	l := p.l
	l.mu.Lock()
	prev, had := l.refusals[pol.ID]
	switch {
	case r.HostTooSmall:
		l.refusals[pol.ID] = r
		l.mu.Unlock()
		if had && prev.HostTooSmall && prev.Detail == r.Detail {
			return
		}
		l.log.Warn("a policy's jobs do not fit this host; running one at a time", "policy", pol.Name, "detail", r.Detail)
		if l.cfg.OnRefusal != nil {
			l.cfg.OnRefusal(pol.ID, r)
		}
	case had && prev.HostTooSmall:
		delete(l.refusals, pol.ID)
		l.mu.Unlock()
		l.log.Info("a policy's jobs fit this host again", "policy", pol.Name)
	default:
		l.mu.Unlock()
	}
}

// maxSpares is the host's bound on warm spares (MaxSpares, its default).
func (a *Admission) maxSpares() int { return SpareBound(a.MaxSpares) }

// SpareBound is the host's bound on warm spares that [admission]
// max_spares sets: 0 its default (DefaultMaxSpares), -1 none.
func SpareBound(maxSpares int) int {
	switch {
	case maxSpares < 0:
		return 0
	case maxSpares == 0:
		return DefaultMaxSpares
	}
	return maxSpares
}
