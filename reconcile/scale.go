package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// failingReasons are the failures that count against
// MaxFailedLaunchesPerMinute when they came before any job: a runner that
// could not be registered, started or kept alive. Lost and Stopped say
// nothing of the next launch, nor does GitHubUnavailable (GitHub failed,
// not the runner: the loop backs off for that); the manager's own stops
// are not failures at all (outcomeFor).
var failingReasons = map[rm.FailureReason]bool{
	rm.RegistrationFailed:        true,
	rm.LaunchFailed:              true,
	rm.StartTimeout:              true,
	rm.ProcessExitedUnexpectedly: true,
	rm.Zombie:                    true,
	// A backend's: each fails the next launch the same way until fixed.
	rm.ImageMissing:       true,
	rm.ImagePullFailed:    true,
	rm.BackendUnavailable: true,
}

// wanted is clamp(demand + Σ min idle, 0, Σ max) over the active policies;
// 0 while draining. demand is GitHub's figure less the jobs of this loop's
// runners that ended since it was taken (demandNow).
func (p *pass) wanted() (wanted, demand int) {
	l := p.l
	demand = l.demandNow()
	if l.draining.Load() {
		return 0, demand
	}
	minIdle, maxSum := 0, 0
	for _, pol := range p.policies {
		if pol.Active() {
			minIdle += pol.MinIdle
			maxSum += pol.Max
		}
	}
	return max(0, min(demand+minIdle, maxSum)), demand
}

// scale launches what is wanted and not live (through admission), or
// scales idle runners down, then runs the cleanups the conclusions left.
// It returns the live and wanted counts after it.
func (p *pass) scale(ctx context.Context) (live, wanted int) {
	p.proveRunner(ctx)
	p.prefetchOrigins(ctx)
	p.l.expireWords(ctx, false)
	livePer := make(map[rm.PolicyID]int)
	for _, it := range p.items {
		if it.holdsSlot() {
			live++
			livePer[it.pol.ID]++
		}
	}
	wanted, _ = p.wanted()
	keep := p.planSpares(ctx, wanted).keep() // warm spares beyond wanted (spares.go)
	if live > wanted+keep {
		p.scaleDown(ctx, live-wanted-keep, p.l.demandIsKnown())
	}
	live += p.scaleUp(ctx, wanted-live, livePer)
	for _, f := range p.cleanups {
		f(ctx)
	}
	return live, wanted
}

// scaleDown removes up to surplus runners GitHub confirms idle: the
// registration first (GitHub refuses while a job was just assigned: the
// runner is left running), then the process. While draining, or for a
// paused policy, runners not yet online go too. Until the demand is known
// (a restart, before the watch's first figure), only a paused policy's
// runners and a drain's are scaled down.
func (p *pass) scaleDown(ctx context.Context, surplus int, demandKnown bool) {
	l := p.l
	draining := l.draining.Load()
	var cands []*item
	for _, it := range p.items {
		if !it.holdsSlot() || it.proc == nil {
			continue
		}
		rt, _ := l.tab.get(it.a.ID)
		if rt.stop != stopNone || rt.stopping {
			continue
		}
		if r, found := p.findRunner(it.a); found && r.Busy {
			continue
		}
		if !draining && !it.pol.Paused && !demandKnown {
			continue
		}
		switch it.a.State {
		case rm.StateIdle:
			if !draining && !it.pol.Paused && p.now.Before(it.a.IdleAt.Add(l.cfg.ScaleDownAfter)) {
				p.deadline(it.a.IdleAt.Add(l.cfg.ScaleDownAfter))
				continue
			}
		case rm.StateStarting:
			if !draining && !it.pol.Paused {
				continue
			}
		default:
			continue
		}
		cands = append(cands, it)
	}
	// Paused policies' runners first, then the longest idle.
	slices.SortStableFunc(cands, func(a, b *item) int {
		if a.pol.Paused != b.pol.Paused {
			if a.pol.Paused {
				return -1
			}
			return 1
		}
		return a.a.IdleAt.Compare(b.a.IdleAt)
	})
	why := stopScaleDown
	if draining {
		why = l.drainReason()
	}
	for _, it := range cands {
		if surplus == 0 || p.isQuiet() {
			return
		}
		if p.deregister(ctx, it, false) {
			it.log.Info("scaling down", "why", string(why))
			p.stop(ctx, it, why)
			surplus--
		}
	}
}

// scaleUp launches up to need runners (at most MaxLaunchesPerPass), each
// admitted first: its journal row is written inside the admission session,
// so the next decision, of any loop, counts it. It also sets the admitted
// capacity. One launch goes first; only once GitHub registered it do the
// others fire, in parallel: when GitHub fails, one registration finds out,
// not a burst of them. It returns how many launches succeeded.
func (p *pass) scaleUp(ctx context.Context, need int, livePer map[rm.PolicyID]int) int {
	l := p.l
	n := 0
	if need > 0 && !l.draining.Load() {
		if p.isQuiet() {
			msg := "GitHub calls held back after a failure"
			if !p.quietUntil.IsZero() {
				msg = "GitHub calls held back until " + p.quietUntil.Format(time.TimeOnly)
			}
			for _, pol := range p.policies {
				p.note(pol.ID, msg)
			}
		} else {
			n = min(need, l.cfg.MaxLaunchesPerPass)
		}
	}
	var budgets map[rm.PolicyID]int
	if n > 0 {
		budgets = p.launchBudgets(ctx)
	}
	if n == 0 && p.spareTurn(true) && !p.quiet {
		budgets = p.launchBudgets(ctx)
	}
	p.lastBatch = n <= 1
	first := p.admitBatch(ctx, min(n, 1), livePer, budgets)
	if len(first) == 0 {
		return p.launchSpares(ctx, p.spareTodo)
	}
	jit, registered := p.register(ctx, first[0])
	if !registered {
		return 0 // GitHub failed: the pass's other launches do not fire
	}
	todo := first
	var wg sync.WaitGroup
	ok := make([]bool, n)
	wg.Go(func() { ok[0] = p.start(ctx, first[0], jit) })
	if n > 1 && !p.isQuiet() {
		p.lastBatch = true
		rest := p.admitBatch(ctx, n-1, livePer, budgets)
		for i, it := range rest {
			wg.Go(func() { ok[i+1] = p.launch(ctx, it) })
		}
		todo = append(todo, rest...)
	}
	wg.Wait()
	launched := 0
	for i, it := range todo {
		if ok[i] {
			launched++
			l.watchProcess(it.a.ID, it.proc)
			p.items = append(p.items, it)
			p.deadline(it.a.StartedAt.Add(l.cfg.StartTimeout))
		}
	}
	return launched + p.launchSpares(ctx, p.spareTodo)
}

// admitBatch takes one admission session: up to n new attempts admitted
// (their rows written), and the admitted capacity set.
func (p *pass) admitBatch(ctx context.Context, n int, livePer, budgets map[rm.PolicyID]int) []*item {
	l := p.l
	sess, err := l.cfg.Admission.begin(ctx, admitDeps{st: l.cfg.Store, host: l.cfg.Host.ID, meters: l.cfg.Meters, tab: l.tab, policies: p.byPolicy})
	if err != nil {
		p.addErr(err)
		return nil
	}
	defer sess.end()
	var todo []*item
	if n > 0 {
		todo = p.admit(ctx, sess, n, livePer, budgets)
	}
	sess.yieldSpares() // runners that grew take memory from spares first
	if p.spareTurn(p.lastBatch) && !p.isQuiet() {
		p.spareTodo = p.admitSpares(ctx, sess, min(p.spares.need, l.cfg.MaxLaunchesPerPass), livePer, budgets)
	}
	p.setCapacity(sess, livePer, l.draining.Load())
	return todo
}

// admit picks the policy of each new attempt (the active one with room and
// the fewest live), asks admission, and writes the admitted attempts'
// pending rows: journal first.
func (p *pass) admit(ctx context.Context, sess *session, n int, livePer, budgets map[rm.PolicyID]int) []*item {
	l := p.l
	refused := make(map[rm.PolicyID]bool)
	var todo []*item
	for len(todo) < n {
		pol := p.pick(livePer, budgets, refused)
		if pol == nil {
			break
		}
		exp := l.cfg.Admission.expectedPeak(l.cfg.Meters, *pol)
		if r, ok := sess.admit(exp, livePer[pol.ID], pol.Max); !ok {
			p.refuse(pol, r)
			refused[pol.ID] = true
			if p.spares != nil {
				p.spares.refused = true // no spare while a job waits for memory
			}
			continue
		}
		id := rm.NewAttemptID()
		a := rm.Attempt{ID: id, Policy: pol.ID, State: rm.StatePending, RunnerName: rm.RunnerName(l.cfg.Host.ID, id),
			CreatedAt: p.now, UpdatedAt: p.now}
		l.tab.with(id, func(r *runtime) { r.inflight = true })
		if err := l.cfg.Store.RecordAttempt(ctx, a); err != nil {
			l.tab.forget(id)
			p.addErr(fmt.Errorf("record new attempt of policy %s: %w", pol.Name, err))
			break
		}
		it := &item{a: a, pol: pol, log: l.log.With("policy", pol.Name, "attempt", id.String())}
		p.byName[a.RunnerName] = it
		livePer[pol.ID]++
		budgets[pol.ID]--
		todo = append(todo, it)
	}
	return todo
}

// pick returns the active policy with room and the fewest live attempts;
// with budgets, only a policy with launch budget left.
func (p *pass) pick(livePer map[rm.PolicyID]int, budgets map[rm.PolicyID]int, refused map[rm.PolicyID]bool) *rm.Policy {
	var best *rm.Policy
	for i := range p.policies {
		pol := &p.policies[i]
		if !pol.Active() || refused[pol.ID] || livePer[pol.ID] >= pol.Max || (budgets != nil && budgets[pol.ID] <= 0) {
			continue
		}
		if best == nil || livePer[pol.ID] < livePer[best.ID] {
			best = pol
		}
	}
	return best
}

// refuse records an admission refusal: counted, logged when its reason
// changes, kept as the policy's last refusal.
func (p *pass) refuse(pol *rm.Policy, r Refusal) {
	l := p.l
	l.mu.Lock()
	prev := l.refusals[pol.ID]
	l.refusals[pol.ID] = r
	l.mu.Unlock()
	if prev.Reason != r.Reason {
		l.log.Info("launch refused by admission", "policy", pol.Name, "reason", r.Reason, "detail", r.Detail)
	} else {
		l.log.Debug("launch refused by admission", "policy", pol.Name, "reason", r.Reason, "detail", r.Detail)
	}
	if l.cfg.OnRefusal != nil {
		l.cfg.OnRefusal(pol.ID, r)
	}
}

// launchBudgets returns, per active policy, how many launches may still
// fail within the last minute: MaxFailedLaunchesPerMinute minus the
// failures the journal shows (so a restart does not reset the count) and
// minus the launches of the minute whose failure may still come (not yet
// seen online, busy or concluded: unproven), so the cap holds for runners
// that take seconds to fail. A policy whose failures reach the cap
// launches nothing until its oldest failure leaves the window; the pause is
// logged when it starts and when it ends.
func (p *pass) launchBudgets(ctx context.Context) map[rm.PolicyID]int {
	l := p.l
	budgets := make(map[rm.PolicyID]int)
	window := p.now.Add(-time.Minute)
	capN := l.cfg.MaxFailedLaunchesPerMinute
	pending := p.unproven(window)
	for _, pol := range p.policies {
		if !pol.Active() {
			continue
		}
		atts, err := l.cfg.Store.Attempts(ctx, store.AttemptFilter{
			Policy: pol.ID, States: []rm.AttemptState{rm.StateFailed},
			Since: window.Add(-l.cfg.StartTimeout - l.cfg.RegisterTimeout), Limit: 500,
		})
		if err != nil {
			p.addErr(fmt.Errorf("read failed attempts of policy %s: %w", pol.Name, err))
			continue
		}
		if note, allowed, held := p.deprecatedHold(&pol, l.deprecated.saw(pol.ID, atts)); held {
			budgets[pol.ID] = allowed
			p.note(pol.ID, note)
			continue
		}
		var ends []time.Time
		for _, a := range atts {
			// A runner that failed during a job was launched fine. One
			// GitHub refused as deprecated (exit 7) is the deprecation
			// hold's (deprecatedHold): it lifts once a newer runner is
			// there, and must not leave a pause behind. Every spare of the
			// old version exits 7 at once: with warm spares sized by the
			// day they were more than the cap, and launches stayed paused
			// a minute after the newer runner was proven.
			deprecated := a.ExitCode != nil && *a.ExitCode == ExitVersionDeprecated
			if failingReasons[a.Outcome.Reason] && a.BusyAt.IsZero() && !a.EndedAt.Before(window) && !deprecated {
				ends = append(ends, a.EndedAt)
			}
		}
		// Launches not yet proven (not online, busy or concluded) count
		// only once the policy has failed in the window: a healthy policy
		// ramps up freely, a failing one stops at exactly the cap even when
		// its runners take seconds to fail.
		unproven := 0
		if len(ends) > 0 {
			unproven = pending[pol.ID]
		}
		budgets[pol.ID] = max(capN-len(ends)-unproven, 0)
		if len(ends) < capN {
			if l.pauses.set(pol.ID, false) {
				l.log.Info("launches resume", "policy", pol.Name, "failed_last_minute", len(ends))
			}
			continue
		}
		slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
		until := ends[len(ends)-capN].Add(time.Minute)
		p.deadline(until)
		p.note(pol.ID, fmt.Sprintf("%d launches failed in the last minute; launching again at %s", len(ends), until.Format(time.TimeOnly)))
		if l.pauses.set(pol.ID, true) {
			l.log.Warn("launches paused: too many failures", "policy", pol.Name, "failed", len(ends), "until", until.Format(time.RFC3339))
		}
	}
	return budgets
}

// setCapacity computes the admitted capacity: the live attempts plus as
// many more as admission would take now, one after the other (busy ones
// only while draining or paused).
func (p *pass) setCapacity(sess *session, livePer map[rm.PolicyID]int, draining bool) {
	l := p.l
	sim := sess.withoutSpares() // GitHub is told jobs: spares yield to them
	free := sim                 // the room's free memory: before the capacity's simulated admissions
	per := make(map[rm.PolicyID]int, len(livePer))
	total := 0
	for id, n := range livePer {
		per[id] = n
		total += n
	}
	// A runner that exited after this pass looked is out of the session's
	// commitments: out of the live count too, as the next pass will have it.
	gone := func(it *item) bool { return it.holdsSlot() && sess.gone[it.a.ID] }
	for _, it := range p.items {
		if gone(it) && per[it.pol.ID] > 0 {
			per[it.pol.ID]--
			total--
		}
	}
	total = p.sparesOutOfCapacity(per, total, gone)
	if draining {
		busy := 0
		for _, it := range p.items {
			if it.holdsSlot() && !gone(it) && it.a.State == rm.StateBusy {
				busy++
			}
		}
		total = busy
	} else {
		// A paused policy's runners count only while they run a job.
		for _, it := range p.items {
			if it.holdsSlot() && !gone(it) && it.pol.Paused && it.a.State != rm.StateBusy {
				total--
			}
		}
		refused := make(map[rm.PolicyID]bool)
		for {
			pol := p.pick(per, nil, refused)
			if pol == nil {
				break
			}
			r, ok := sim.admit(l.cfg.Admission.expectedPeak(l.cfg.Meters, *pol), per[pol.ID], pol.Max)
			p.noteFit(pol, r)
			if !ok {
				p.noteCapRefusal(pol.ID, r)
				refused[pol.ID] = true
				continue
			}
			per[pol.ID]++
			total++
		}
	}
	p.admitted = per
	l.capacity.Store(int64(total))
	if ro, ok := l.cfg.Target.Demand.(rm.RoomObserver); ok {
		ro.ObserveRoom(p.room(free, total, gone))
	}
}

// room is what the loop runs and could take, for a demand source that
// shares a fleet's jobs out (rm.RoomObserver).
func (p *pass) room(sim session, capacity int, gone func(*item) bool) rm.Room {
	r := rm.Room{Capacity: capacity}
	for _, it := range p.items {
		switch {
		case !it.holdsSlot() || gone(it):
		case it.a.State == rm.StateBusy:
			r.Busy++
		default:
			r.Idle++
		}
	}
	if limit, ok := sim.limit(); ok {
		r.FreeMemory, r.MemoryKnown = sub(limit, sim.committed), true
	}
	r.WarmFree = p.warmFree()
	return r
}

// launch runs one admitted attempt's launch: register, then start.
func (p *pass) launch(ctx context.Context, it *item) bool {
	jit, ok := p.register(ctx, it)
	return ok && p.start(ctx, it, jit)
}

// register is a launch's first half: registering recorded, the JIT config
// asked for, its runner id recorded. A failure concludes the attempt:
// Failed(GitHubUnavailable) when GitHub failed (githubUnavailable), else
// Failed(RegistrationFailed).
func (p *pass) register(ctx context.Context, it *item) (rm.JITConfig, bool) {
	l := p.l
	a, _ := it.a.MoveTo(rm.StateRegistering, l.cfg.Now())
	// The slot is leased and journaled before anything is asked of GitHub:
	// the journal says which attempt held which slot, whatever happens next.
	if slot := l.leaseSlot(it); slot != nil {
		a.Slot = slot.String()
		it.warm = slot
	}
	if !p.record(ctx, it, a) {
		l.tab.update(it.a.ID, func(r *runtime) { r.inflight = false })
		l.releaseSlot(ctx, it.pol, rm.Attempt{ID: a.ID, Slot: a.Slot}, it.log)
		return rm.JITConfig{}, false // the next pass concludes the pending row
	}
	// A policy moved to another host since this pass read it (its pending
	// row was written after the move, which found none live): nothing was
	// asked of GitHub yet, and the new owner leaves the row alone (its
	// runner name is this host's), so this host ends it.
	if pol, err := l.cfg.Store.Policy(ctx, a.Policy); err == nil && !pol.IsOwnedBy(l.cfg.Host.ID) {
		p.failLaunch(ctx, it, rm.RegistrationFailed, "the policy was moved to host "+pol.Host.String()+" before its runner was registered", 0)
		return rm.JITConfig{}, false
	}
	jctx, cancel := context.WithTimeout(ctx, l.cfg.RegisterTimeout)
	jit, err := l.cfg.Target.Registrar.JITConfig(jctx, a.RunnerName)
	cancel()
	if err != nil {
		p.githubErr(err, "register runner")
		reason := rm.RegistrationFailed
		if githubUnavailable(err) {
			reason = rm.GitHubUnavailable
		}
		p.failLaunch(ctx, it, reason, "registering the runner: "+err.Error(), 0)
		return rm.JITConfig{}, false
	}
	p.githubOK()
	a = it.a
	a.GitHubRunnerID = jit.RunnerID
	p.record(ctx, it, a)
	return jit, true
}

// start is a launch's second half: the process started, starting with pid
// and start stamp recorded. A failure concludes the attempt
// (LaunchFailed) and removes its registration.
func (p *pass) start(ctx context.Context, it *item, jit rm.JITConfig) bool {
	l := p.l
	defer l.tab.update(it.a.ID, func(r *runtime) { r.inflight = false })
	a := it.a
	dir, err := l.runnerDir(*it.pol, a.ID)
	if err != nil {
		p.failLaunch(ctx, it, rm.LaunchFailed, err.Error(), jit.RunnerID)
		return false
	}
	p.limitMemory(it)
	proc, err := l.cfg.launcherFor(it.pol).Launch(ctx, rm.LaunchSpec{
		Attempt: a.ID, Policy: *it.pol, RunnerDir: dir, JITConfig: jit.Encoded, Env: slices.Clone(l.cfg.RunnerEnv),
		Warm: it.warm,
	})
	if err != nil {
		// The launcher's error may name a reason of its backend (an image
		// missing, an engine down): rm.LaunchFailureReason.
		p.failLaunch(ctx, it, rm.LaunchFailureReason(err), "launching the runner: "+err.Error(), jit.RunnerID)
		return false
	}
	l.tab.with(a.ID, func(r *runtime) { r.proc = proc })
	it.proc = proc
	a = it.a
	a.PID, a.ProcessStart = proc.PID(), proc.Start()
	a, _ = a.MoveTo(rm.StateStarting, l.cfg.Now())
	if p.record(ctx, it, a) {
		it.log.Info("runner launched", "pid", a.PID, "runner_id", a.GitHubRunnerID)
	}
	return true // a failed write is repaired by the next pass (the table has the process)
}

// failLaunch concludes an attempt whose launch failed, removing its
// registration and keeping its directory for debugging.
func (p *pass) failLaunch(ctx context.Context, it *item, reason rm.FailureReason, detail string, runnerID int64) {
	l := p.l
	if runnerID != 0 && !p.isQuiet() {
		if err := l.cfg.Target.Registrar.RemoveRunner(ctx, runnerID); err != nil {
			it.log.Warn("could not remove the registration of a failed launch; it will be reaped later", "err", err)
			p.githubErr(err, "remove runner")
		}
	}
	b, err := it.a.Conclude(rm.FailedWith(reason, detail), l.cfg.Now())
	if err == nil {
		p.record(ctx, it, b)
	}
	it.concluded = true
	l.tab.forget(it.a.ID)
	if reason != rm.RegistrationFailed && reason != rm.GitHubUnavailable {
		// The launch was tried: what it left (a directory, a container) goes.
		if err := l.cfg.launcherFor(it.pol).Cleanup(it.a.ID, true); err != nil {
			it.log.Warn("could not clean the attempt's directory", "err", err)
		}
	}
	// No job ran in the slot: it goes back as it was.
	l.releaseSlot(ctx, it.pol, rm.Attempt{ID: it.a.ID, Slot: it.a.Slot}, it.log)
	if reason == rm.GitHubUnavailable {
		it.log.Warn("GitHub failed to register the runner; backing off", "detail", detail)
		p.note(it.pol.ID, "GitHub failed: "+detail+"; backing off")
		return
	}
	it.log.Warn("launch failed", "reason", string(reason), "detail", detail)
	p.note(it.pol.ID, "launch failed: "+detail)
}
