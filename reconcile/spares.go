package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// Warm spares (scale-set mode): runners started, connected and idle beyond
// the jobs in flight, so that the next job GitHub assigns finds a runner
// already listening instead of waiting for one to boot. A loop keeps
//
//	min(Σ Spare of its active scale-set policies, ⌈r⌉ + 1 + ⌊√r⌋), r = jobs ending per second × boot
//
// of them: the jobs ending per second (each end frees a slot that GitHub
// fills at once with the next job), the larger of the last minute's ends
// and the busy runners (or, if more, the runners wanted for jobs: a burst
// coming, min idle runners waiting for one) over the mean of the last
// jobs' durations (which sees a burst coming before its jobs end), the
// boot measured per policy (launch → the runner took a job, or was seen
// online: the fastest of the last bootSamples). ⌈r⌉ of them are booting
// at any time in a steady stream of ends; one more is for a job arriving
// at an idle policy, and ⌊√r⌋ more for ends that come close together. The capacity told to GitHub stays the admitted number of jobs
// (setCapacity leaves spares out), so GitHub never assigns more than max.
//
// Memory: a spare counts in admission at an idle runner's RSS (measured
// per policy), and yields first: a job's admission is decided as if no
// spare held memory, and when the job fits only without them, spares are
// stopped until it fits (session.admit); a pass whose commitments exceed
// the host (busy runners grew) stops spares too. A spare is launched only
// when every job of the pass was admitted.
//
// A spare listening longer than SpareRecycleAfter is recycled before
// GitHub drops it (idle JIT runners have been seen removed after 2 to 6
// minutes): its replacement is launched first, and it is stopped once
// another spare listens, and in any case spareStopBy (under 2 minutes)
// after its runner started. Scale-down and stop treat spares as any idle
// runner. Spares are runners like any other to GitHub: whichever listens
// first takes the next job, so a spare is a count (the non-busy runners
// beyond the jobs that need one), not an identity; planSpares names the
// oldest of them.
//
// Classic mode keeps none: a registered idle runner takes any matching
// job, so a spare would run more jobs than max.

// The defaults of the warm spares.
const (
	// DefaultSpareRecycleAfter is how long a spare may listen without a job
	// before it is replaced.
	DefaultSpareRecycleAfter = 90 * time.Second
	// DefaultBootEstimate is a runner's boot until one is measured.
	DefaultBootEstimate = 10 * time.Second
	// DefaultSpareMemory is what an idle runner is expected to hold until
	// one is measured.
	DefaultSpareMemory uint64 = 128 << 20
)

const (
	// spareRateWindow is how far back job ends count in the rate.
	spareRateWindow = time.Minute
	// spareMinRateSpan is the shortest span the rate is taken over, so a
	// few ends at once do not read as a flood.
	spareMinRateSpan = 2 * time.Second
	// bootSamples is how many boots per policy are kept, durSamples how
	// many job durations per loop.
	bootSamples = 16
	durSamples  = 16
	// spareRecycleGrace is how long past its recycling an expired spare
	// waits for its replacement before it is stopped anyway.
	spareRecycleGrace = 20 * time.Second
	// spareStopBy bounds a spare's life from its runner's start, whatever
	// SpareRecycleAfter says, a replacement's fate or GitHub's answers:
	// GitHub has been seen dropping idle JIT runners from 2 minutes of
	// listening on, and a runner listens at most from its start. The
	// margin under 2 minutes covers the pass the deadline wakes.
	spareStopBy = 2*time.Minute - 10*time.Second
)

// Why the manager stops a spare.
const (
	stopSpareRecycled stopReason = "spare recycled"
	stopSpareYielded  stopReason = "spare yielded its memory"
)

// spareState is a loop's bookkeeping for its spares; the pass owns it
// (Loop.passMu).
type spareState struct {
	ends    []time.Time
	durs    []time.Duration
	boots   map[rm.PolicyID][]time.Duration
	idleRSS map[rm.PolicyID]uint64
}

// sparePlan is one pass's view of its spares.
type sparePlan struct {
	target int
	// ids are the live spares (marked), per their policy in per.
	ids map[rm.AttemptID]bool
	per map[rm.PolicyID]int
	// fresh spares count toward the target (freshPer: per policy, against
	// its Spare); expiring ones wait for their replacement (expPer), and
	// stopping ones are on their way out: both are kept beside the target.
	fresh, expiring, stopping int
	freshPer, expPer          map[rm.PolicyID]int
	// need is how many spares the pass may launch, once the jobs' are.
	need int
	// refused: a job's launch was refused this pass, so no spare goes.
	refused bool
	// draining: the loop keeps nothing; a drain or a stop removes spares
	// as any idle runner, expiring or not.
	draining bool
	// bound says, per policy, why its spares stay below the target: the
	// refusal of its last spare this pass (memory, the host's bound).
	bound map[rm.PolicyID]string
}

// keepsSpares: the policy's loop keeps warm spares for it.
func keepsSpares(pol *rm.Policy) bool {
	return pol.Active() && pol.Spares() > 0
}

// spareTarget is how many spares the loop keeps now beyond wanted, busy
// of its runners running jobs.
func (p *pass) spareTarget(busy int) int {
	l := p.l
	if l.draining.Load() || !l.demandIsKnown() {
		return 0
	}
	capN := 0
	var boot time.Duration
	for i := range p.policies {
		if pol := &p.policies[i]; keepsSpares(pol) {
			capN += pol.Spares()
			boot = max(boot, l.spares.bootOr(pol.ID))
		}
	}
	if capN == 0 {
		return 0
	}
	// ⌈rate × boot⌉ spares are booting at any time in a steady stream of
	// ends (each end's replacement listens a boot later), so the listening
	// ones are the rest: one for a job arriving at an idle policy, and
	// ⌊√(rate × boot)⌋ more for the ends that come close together (a
	// Poisson stream's spread over one boot).
	rb := l.spares.endRate(p.now, busy, boot) * boot.Seconds()
	n := int(math.Ceil(rb-1e-9)) + 1 + int(math.Sqrt(rb)+1e-9)
	// A backlog GitHub holds beyond the capacity told is known now, before
	// any job ends and the rate shows it: every end will find its next job
	// waiting, so each queued job may have a spare listening for it.
	l.mu.Lock()
	queued := l.demand.Queued
	l.mu.Unlock()
	n = max(n, queued)
	return min(n, capN)
}

// listeningSince is when a live runner began listening, as far as the
// loop can tell: seen idle, or started a measured boot ago.
func (p *pass) listeningSince(it *item) (time.Time, bool) {
	switch it.a.State {
	case rm.StateIdle:
		return it.a.IdleAt, true
	case rm.StateStarting:
		at := it.a.StartedAt.Add(p.l.spares.bootOr(it.pol.ID))
		return at, !p.now.Before(at)
	}
	return time.Time{}, false
}

// planSpares marks the loop's spares (the oldest non-busy runners beyond
// the jobs that need one, at most each policy's Spare), measures the idle
// runners' memory, stops spares that must yield or are recycled, and
// returns the plan the scale step follows.
func (p *pass) planSpares(ctx context.Context, wanted int) *sparePlan {
	l := p.l
	sp := &sparePlan{ids: map[rm.AttemptID]bool{}, per: map[rm.PolicyID]int{},
		freshPer: map[rm.PolicyID]int{}, expPer: map[rm.PolicyID]int{}, draining: l.draining.Load()}
	busy := 0
	var idle []*item
	for _, it := range p.items {
		if !it.holdsSlot() || it.proc == nil {
			continue
		}
		if p.running(it) {
			busy++
			continue
		}
		if it.a.State == rm.StateBusy {
			continue // its job completed: it is on its way out
		}
		if it.a.State == rm.StateStarting || it.a.State == rm.StateIdle {
			idle = append(idle, it)
		}
	}
	// The runners wanted for jobs end jobs as the busy ones do once their
	// jobs come: min idle runners waiting for a burst are backed by spares
	// as if the burst had come (a spare launched when it comes listens a
	// boot too late for the jobs that end before).
	sp.target = p.spareTarget(max(busy, wanted))
	p.measureIdle(idle)
	slices.SortStableFunc(idle, func(a, b *item) int {
		at, _ := p.listeningSince(a)
		bt, _ := p.listeningSince(b)
		return at.Compare(bt)
	})
	n := len(idle) - max(wanted-busy, 0)
	for _, it := range idle {
		if n > 0 && keepsSpares(it.pol) {
			sp.ids[it.a.ID] = true
			sp.per[it.pol.ID]++
			n--
		}
	}
	for _, it := range idle {
		spare, cost := sp.ids[it.a.ID], l.spares.cost(it.pol.ID)
		l.tab.update(it.a.ID, func(r *runtime) {
			r.spare, r.spareCost, r.nudge = spare, cost, l.Nudge
			if !spare {
				r.yield = false
			}
		})
	}
	p.tendSpares(ctx, sp, idle)
	sp.need = max(sp.target-sp.fresh, 0)
	p.spares = sp
	return sp
}

// measureIdle keeps, per policy, the largest RSS its idle runners hold.
func (p *pass) measureIdle(idle []*item) {
	l := p.l
	if l.cfg.Meters == nil {
		return
	}
	for _, it := range idle {
		if it.a.State != rm.StateIdle {
			continue
		}
		if rss, ok := l.cfg.Meters.CurrentRSS(it.a.ID); ok && rss > 0 {
			if l.spares.idleRSS == nil {
				l.spares.idleRSS = make(map[rm.PolicyID]uint64)
			}
			l.spares.idleRSS[it.pol.ID] = max(l.spares.idleRSS[it.pol.ID], rss)
		}
	}
}

// spareDue is when a spare is due for recycling (listening for after,
// and at the latest spareRecycleGrace before stopBy) and when it is
// stopped whether or not a replacement listens: spareRecycleGrace later,
// and never past spareStopBy from its runner's start.
func (p *pass) spareDue(it *item, after time.Duration) (recycle, stopBy time.Time) {
	since, _ := p.listeningSince(it)
	stopBy = it.a.StartedAt.Add(spareStopBy)
	recycle = since.Add(after)
	if latest := stopBy.Add(-spareRecycleGrace); latest.Before(recycle) {
		recycle = latest
	}
	if g := recycle.Add(spareRecycleGrace); g.Before(stopBy) {
		stopBy = g
	}
	return recycle, stopBy
}

// tendSpares stops the spares that must yield their memory to a job, and
// recycles those due (spareDue) once another spare listens, or at their
// stopBy whatever happens; it counts the rest.
func (p *pass) tendSpares(ctx context.Context, sp *sparePlan, idle []*item) {
	l := p.l
	after := cmp.Or(l.cfg.SpareRecycleAfter, DefaultSpareRecycleAfter)
	var expired []*item
	listening := 0
	for _, it := range idle {
		if !sp.ids[it.a.ID] {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.stop != stopNone || rt.stopping {
			sp.stopping++
			continue
		}
		if rt.yield {
			if p.deregister(ctx, it, false) {
				it.log.Info("spare yields its memory to a job")
				p.stop(ctx, it, stopSpareYielded)
				sp.stopping++
			}
			continue
		}
		since, ok := p.listeningSince(it)
		recycle, _ := p.spareDue(it, after)
		if !p.now.Before(recycle) {
			expired = append(expired, it)
			continue
		}
		sp.fresh++
		sp.freshPer[it.pol.ID]++
		p.deadline(recycle)
		if ok {
			listening++
		} else {
			p.deadline(since)
		}
	}
	for _, it := range expired {
		since, _ := p.listeningSince(it)
		_, stopBy := p.spareDue(it, after)
		if listening == 0 && p.now.Before(stopBy) {
			sp.expiring++
			sp.expPer[it.pol.ID]++
			p.deadline(stopBy)
			continue
		}
		// At its stopBy it goes even if GitHub cannot be told first (its
		// registration is removed at its conclusion or reaped), unless
		// GitHub says a job was just given to it.
		late := !p.now.Before(stopBy)
		if p.deregister(ctx, it, false) || (late && !p.refusedBusy(it)) {
			it.log.Info("recycling a spare before GitHub drops it", "listening_for", p.now.Sub(since).Round(time.Second),
				"running_for", p.now.Sub(it.a.StartedAt).Round(time.Second))
			p.stop(ctx, it, stopSpareRecycled)
			sp.stopping++
		}
	}
}

// refusedBusy: GitHub refused to remove the attempt's registration, a
// job being just assigned to it.
func (p *pass) refusedBusy(it *item) bool {
	rt, _ := p.l.tab.get(it.a.ID)
	return rt.refusedBusy
}

// keep is how many live runners beyond wanted the spares account for.
func (sp *sparePlan) keep() int {
	if sp == nil || sp.draining {
		return 0
	}
	return sp.target + sp.expiring + sp.stopping
}

// spareTurn reports whether this admission session admits the pass's
// spares: the last one of the pass, with every job admitted.
func (p *pass) spareTurn(last bool) bool {
	sp := p.spares
	return last && sp != nil && sp.need > 0 && !sp.refused && !p.l.draining.Load()
}

// admitSpares admits up to the plan's need of spares in sess, after the
// jobs' launches: each picks the active scale-set policy with spare room
// (live below Max + Spare) and the fewest live, and its row is written.
func (p *pass) admitSpares(ctx context.Context, sess *session, n int, livePer, budgets map[rm.PolicyID]int) []*item {
	l := p.l
	sp := p.spares
	refused := make(map[rm.PolicyID]bool)
	var todo []*item
	for len(todo) < n {
		var pol *rm.Policy
		for i := range p.policies {
			c := &p.policies[i]
			if !keepsSpares(c) || refused[c.ID] || sp.freshPer[c.ID] >= c.Spares() || livePer[c.ID] >= c.Max+c.Spares()+sp.expPer[c.ID] ||
				(budgets != nil && budgets[c.ID] <= 0) {
				continue
			}
			if pol == nil || livePer[c.ID] < livePer[pol.ID] {
				pol = c
			}
		}
		if pol == nil {
			break
		}
		cost := l.spares.cost(pol.ID)
		if r, ok := sess.admitSpare(cost, sp.freshPer[pol.ID], pol.Spares()); !ok {
			l.log.Debug("spare not admitted", "policy", pol.Name, "reason", r.Reason, "detail", r.Detail)
			refused[pol.ID] = true
			if sp.bound == nil {
				sp.bound = map[rm.PolicyID]string{}
			}
			sp.bound[pol.ID] = r.String()
			continue
		}
		id := rm.NewAttemptID()
		a := rm.Attempt{ID: id, Policy: pol.ID, State: rm.StatePending, RunnerName: rm.RunnerName(l.cfg.Host.ID, id),
			CreatedAt: p.now, UpdatedAt: p.now}
		l.tab.with(id, func(r *runtime) { r.inflight, r.spare, r.spareCost, r.nudge = true, true, cost, l.Nudge })
		if err := l.cfg.Store.RecordAttempt(ctx, a); err != nil {
			l.tab.forget(id)
			p.addErr(fmt.Errorf("record new spare of policy %s: %w", pol.Name, err))
			break
		}
		it := &item{a: a, pol: pol, log: l.log.With("policy", pol.Name, "attempt", id.String())}
		p.byName[a.RunnerName] = it
		livePer[pol.ID]++
		sp.per[pol.ID]++
		sp.freshPer[pol.ID]++
		sp.ids[id] = true
		if budgets != nil {
			budgets[pol.ID]--
		}
		todo = append(todo, it)
	}
	sp.need -= len(todo)
	return todo
}

// launchSpares launches the spares admitted this pass, in parallel, and
// returns how many started.
func (p *pass) launchSpares(ctx context.Context, todo []*item) int {
	if len(todo) == 0 {
		return 0
	}
	l := p.l
	ok := make([]bool, len(todo))
	var wg sync.WaitGroup
	for i, it := range todo {
		if p.isQuiet() {
			l.tab.update(it.a.ID, func(r *runtime) { r.inflight = false })
			continue // the next pass concludes its pending row
		}
		wg.Go(func() { ok[i] = p.launch(ctx, it) })
	}
	wg.Wait()
	n := 0
	for i, it := range todo {
		if ok[i] {
			n++
			it.log.Info("warm spare launched")
			l.watchProcess(it.a.ID, it.proc)
			p.items = append(p.items, it)
			p.deadline(it.a.StartedAt.Add(l.cfg.StartTimeout))
			if p.spares.expiring > 0 {
				// Listening a boot later: the spare it replaces goes then.
				p.deadline(it.a.StartedAt.Add(l.spares.bootOr(it.pol.ID)))
			}
			recycle, _ := p.spareDue(it, cmp.Or(l.cfg.SpareRecycleAfter, DefaultSpareRecycleAfter))
			p.deadline(recycle)
		}
	}
	return n
}

// sparesOutOfCapacity takes out of the capacity per policy (per, total)
// what runs no job: the live spares, and, for a policy that keeps spares,
// the runners whose job completed and whose process has not exited yet
// (a spare may have taken the next job meanwhile); such a policy's
// capacity is at most its max. GitHub is told the jobs admission admits.
func (p *pass) sparesOutOfCapacity(per map[rm.PolicyID]int, total int, gone func(*item) bool) int {
	sp := p.spares
	if sp == nil {
		return total
	}
	for _, it := range append(slices.Clip(p.items), p.spareTodo...) {
		if !it.holdsSlot() || gone(it) || per[it.pol.ID] == 0 {
			continue
		}
		done := false
		if !sp.ids[it.a.ID] && keepsSpares(it.pol) {
			rt, _ := p.l.tab.get(it.a.ID)
			done = rt.jobCompleted
		}
		if sp.ids[it.a.ID] || done {
			per[it.pol.ID]--
			total--
		}
	}
	for i := range p.policies {
		if pol := &p.policies[i]; keepsSpares(pol) && per[pol.ID] > pol.Max {
			total -= per[pol.ID] - pol.Max
			per[pol.ID] = pol.Max
		}
	}
	return total
}

// isSpare: the item is one of the pass's live spares.
func (p *pass) isSpare(it *item) bool {
	return p.spares != nil && p.spares.ids[it.a.ID] && it.holdsSlot()
}

// liveSpares is how many of the pass's items are live spares.
func (p *pass) liveSpares() int {
	n := 0
	for _, it := range p.items {
		if p.isSpare(it) {
			n++
		}
	}
	return n
}

// spareStatus fills a policy's spare figures for Status.
func (p *pass) spareStatus(ps *status.Policy) {
	l := p.l
	if sp := p.spares; sp != nil {
		ps.Spares = sp.per[ps.ID]
		if pol := p.byPolicy[ps.ID]; pol != nil && keepsSpares(pol) {
			ps.SpareTarget = min(sp.target, pol.Spares())
			ps.SpareAuto = pol.SparesAuto()
			ps.SpareCap = pol.Spares()
			if ps.Spares < ps.SpareTarget {
				ps.SpareNote = sp.bound[ps.ID]
			}
		}
	}
	ps.Boot, _ = l.spares.boot(ps.ID)
}
