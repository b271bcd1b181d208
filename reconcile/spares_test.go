package reconcile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// spareEnv is a scale-set policy of max runners with a cap of spare warm
// spares.
func spareEnv(t *testing.T, maxN, spare int, edit func(c *reconcile.Config)) *env {
	t.Helper()
	return newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", maxN).Spare(spare).Active(), edit)
}

// byState counts the live attempts per state.
func (e *env) byState() map[rm.AttemptState]int {
	n := map[rm.AttemptState]int{}
	for _, a := range e.live() {
		n[a.State]++
	}
	return n
}

// idleAttempts are the live attempts not running a job.
func (e *env) notBusy() []rm.Attempt {
	var out []rm.Attempt
	for _, a := range e.live() {
		if a.State != rm.StateBusy {
			out = append(out, a)
		}
	}
	return out
}

// runJobs plays one round: every live runner not busy takes one of the
// jobs (demand reported as jobs, capped at the capacity the loop told
// GitHub, as GitHub does), a pass, then every busy runner finishes and
// exits, a pass. It checks what GitHub may never see: more jobs in flight
// than max.
func (e *env) runJobs(jobs int, next *int64) {
	e.t.Helper()
	assigned := min(jobs, e.loop.Capacity())
	require.LessOrEqual(e.t, e.loop.Capacity(), e.policy.Max, "the capacity told to GitHub counts jobs, never spares")
	var evs []rm.JobEvent
	for _, a := range e.notBusy()[:min(assigned, len(e.notBusy()))] {
		*next++
		evs = append(evs, started(a.RunnerName, *next))
	}
	e.demand(assigned, evs...)
	e.clock.Advance(100 * time.Millisecond)
	e.pass()
	busy := 0
	for _, a := range e.live() {
		if a.State == rm.StateBusy {
			busy++
		}
	}
	require.LessOrEqual(e.t, busy, e.policy.Max, "jobs in flight never pass max")
	require.LessOrEqual(e.t, len(e.live()), e.policy.Max+e.policy.Spare, "runners never pass max + spare")
	e.clock.Advance(400 * time.Millisecond)
	for _, a := range e.live() {
		if a.State == rm.StateBusy {
			e.target.drop(a.RunnerName)
			e.launcher.proc(a.ID).exit(0)
		}
	}
	e.demand(max(jobs-assigned, 0))
	e.pass()
}

func TestSparesNeverPushJobsPastMax(t *testing.T) {
	e := spareEnv(t, 2, 3, nil)
	e.demand(0)
	e.pass()
	require.Len(t, e.live(), 1, "an idle policy keeps one spare")
	assert.Equal(t, 2, e.loop.Capacity(), "GitHub is told max jobs, not max + the spare")

	var job int64
	for range 12 {
		e.runJobs(5, &job) // more jobs than max, every round
	}
	st := e.loop.Status().Policies[0]
	assert.Equal(t, 3, st.SpareTarget, "jobs ending fast raise the spares to the cap")
	assert.LessOrEqual(t, e.loop.Capacity(), 2)
	assert.Equal(t, 5, len(e.live()), "max jobs' runners and the cap of spares")
	assert.NotZero(t, st.Boot, "boots are measured from the runners that took jobs")
}

func TestSparesTarget(t *testing.T) {
	e := spareEnv(t, 10, 20, nil)
	e.demand(0)
	e.pass()
	assert.Equal(t, 1, e.loop.Status().Policies[0].SpareTarget, "one spare for a job arriving at an idle policy")

	// Ten jobs; their runners take 2 s to boot.
	e.demand(10)
	for range 3 {
		e.pass()
	}
	// Ten runners wanted for jobs are taken to end one a boot each once
	// their jobs come (the boot unmeasured: 10 s): rate × boot = 10, so
	// ⌈10⌉ + 1 + ⌊√10⌋ spares, launched with them (as admission lets),
	// not a boot later.
	assert.Equal(t, 14, e.loop.Status().Policies[0].SpareTarget)
	require.Greater(t, len(e.live()), 11, "spares launched before the jobs' runners boot")
	require.LessOrEqual(t, len(e.live()), 10+14)
	e.clock.Advance(2 * time.Second)
	var evs []rm.JobEvent
	for i, a := range e.live()[:10] {
		evs = append(evs, started(a.RunnerName, int64(i+1)))
	}
	e.demand(10, evs...)
	e.pass()
	require.Equal(t, 10, e.byState()[rm.StateBusy])
	assert.Equal(t, 14, e.loop.Status().Policies[0].SpareTarget, "no job has ended yet: each is taken to last a boot, 10 ending in 2 s")

	// They end within a second, after 1.0–1.9 s each: ten ends over the
	// rate's shortest span (2 s) are 5 a second, × the 2 s boot = 10:
	// 10 + 1 + ⌊√10⌋.
	var busy []rm.Attempt
	for _, a := range e.live() {
		if a.State == rm.StateBusy {
			busy = append(busy, a)
		}
	}
	e.clock.Advance(time.Second)
	for i, a := range busy {
		e.target.drop(a.RunnerName)
		e.launcher.proc(a.ID).exit(0)
		e.demand(10 - i - 1)
		e.pass()
		e.clock.Advance(100 * time.Millisecond)
	}
	st := e.loop.Status().Policies[0]
	assert.Equal(t, 2*time.Second, st.Boot, "the fastest boot of those that took jobs")
	assert.Equal(t, 14, st.SpareTarget)

	// A minute on, the ends are forgotten, but four busy runners at the
	// mean job (1.45 s) end 2.76 a second: ⌈5.5⌉ + 1 + ⌊√5.5⌋.
	e.clock.Advance(time.Minute)
	e.demand(0)
	e.pass()
	idle := e.notBusy()
	require.GreaterOrEqual(t, len(idle), 4)
	evs = evs[:0]
	for i, a := range idle[:4] {
		evs = append(evs, started(a.RunnerName, int64(100+i)))
	}
	e.demand(4, evs...)
	e.pass()
	assert.Equal(t, 9, e.loop.Status().Policies[0].SpareTarget)

	// Nothing running, nothing ended lately: one again.
	for _, a := range e.live() {
		if a.State == rm.StateBusy {
			e.target.drop(a.RunnerName)
			e.launcher.proc(a.ID).exit(0)
		}
	}
	e.demand(0)
	e.pass()
	e.clock.Advance(2 * time.Minute)
	e.pass()
	assert.Equal(t, 1, e.loop.Status().Policies[0].SpareTarget)
}

func TestSparesDisabled(t *testing.T) {
	for name, pb := range map[string]*storetest.PolicyBuilder{
		"Zero":    storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 2).Spare(0).Active(),
		"Classic": storetest.NewPolicy().Repository("acme/repo").Labels("linux").Max(2).Spare(2).Active(),
		"Paused":  storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 2).Spare(2).Paused(),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, pb, nil)
			e.demand(0)
			e.pass()
			assert.Empty(t, e.live(), "no spare")
		})
	}
}

// A host that holds exactly max jobs: the spares' memory never lowers the
// capacity told to GitHub, a spare that would not fit beside the jobs is
// not launched, and when busy runners grow, the spare yields: its
// registration removed, its process stopped, concluded idle.
func TestSparesYieldToJobsUnderMemoryPressure(t *testing.T) {
	const gib = 1 << 30
	adm := &reconcile.Admission{Memory: fakeMemory{total: 4 * gib}}
	e := newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 4).Spare(1).MemoryEstimate(gib).Active(),
		func(c *reconcile.Config) { c.Admission = adm })
	e.demand(0)
	e.pass()
	require.Len(t, e.live(), 1, "one spare")
	spare := e.live()[0]
	assert.Equal(t, 4, e.loop.Capacity())

	// Three jobs come; the spare takes one, two runners are launched for
	// the others, and a new spare beside them.
	e.demand(3, started(spare.RunnerName, 1))
	e.pass()
	var names []string
	for _, a := range e.notBusy() {
		names = append(names, a.RunnerName)
	}
	require.Len(t, names, 3, "two for the jobs, one spare")
	e.demand(3, started(names[0], 2), started(names[1], 3))
	e.pass()
	require.Equal(t, 3, e.byState()[rm.StateBusy])
	require.Len(t, e.notBusy(), 1)
	assert.Equal(t, 4, e.loop.Capacity(), "3 GiB of jobs and a spare: a fourth job still fits, the spare yields to it")
	assert.Equal(t, uint64(3*gib)+reconcile.DefaultSpareMemory, e.loop.Status().Memory.CommittedBytes,
		"three jobs at 1 GiB and the spare at an idle runner's default")
	mem := e.loop.Status().Memory
	assert.Equal(t, uint64(reconcile.DefaultSpareMemory), mem.SpareBytes, "the spare's part, which a job takes back")
	assert.Equal(t, 3, mem.Runners, "the three jobs' runners")
	assert.Equal(t, 1, mem.Spares)

	// The busy runners grow past their estimate: the host is over, the
	// spare yields.
	for _, a := range e.live() {
		if a.State == rm.StateBusy {
			e.meters.mu.Lock()
			e.meters.rss[a.ID] = gib + gib/3 // 4 GiB with the spare's 128 MiB: over
			e.meters.mu.Unlock()
		}
	}
	e.pass() // marks the spare to yield
	e.pass() // its loop stops it
	left := e.notBusy()
	require.Len(t, left, 1)
	p := e.launcher.proc(left[0].ID)
	require.Eventually(t, p.wasStopped, 5*time.Second, time.Millisecond, "the spare was stopped")
	assert.False(t, e.target.has(left[0].RunnerName), "its registration removed first")
	e.pass()
	ended := e.ended()
	require.Len(t, ended, 1)
	assert.Equal(t, rm.ExitedIdleWithoutWork, ended[0].Outcome.Kind)
	assert.Contains(t, ended[0].Outcome.Detail, "spare yielded its memory")
	assert.Empty(t, e.loop.Status().Policies[0].LastRefusal, "no job was refused")
	assert.Len(t, e.live(), 3, "no new spare while it would not fit")
}

func TestSparesRecycled(t *testing.T) {
	e := spareEnv(t, 2, 1, func(c *reconcile.Config) { c.SpareRecycleAfter = time.Minute })
	e.demand(0)
	e.pass()
	require.Len(t, e.live(), 1)
	old := e.live()[0]

	// Listening from its boot (10 s by default until measured) for the
	// recycle limit: its replacement goes first.
	e.clock.Advance(reconcile.DefaultBootEstimate + time.Minute)
	e.demand(0)
	e.pass()
	require.Len(t, e.live(), 2, "the replacement is launched while the old spare listens")
	assert.Empty(t, e.attempt(old.ID).LastMessage, "the old spare is not being stopped")

	// Once the replacement listens, the old one is recycled.
	e.clock.Advance(reconcile.DefaultBootEstimate)
	e.pass()
	require.Eventually(t, e.launcher.proc(old.ID).wasStopped, 5*time.Second, time.Millisecond, "recycled once another spare listens")
	assert.False(t, e.target.has(old.RunnerName), "registration first")
	e.pass()
	got := e.attempt(old.ID)
	assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind)
	assert.Contains(t, got.Outcome.Detail, "spare recycled")
	require.Len(t, e.live(), 1, "one spare again")
	assert.NotEqual(t, old.ID, e.live()[0].ID)
	assert.Contains(t, e.logs.String(), "recycling a spare before GitHub drops it")
}

// An expired spare whose replacement cannot listen (GitHub fails to
// register it) is stopped all the same after its grace.
func TestSparesRecycledAfterGrace(t *testing.T) {
	e := spareEnv(t, 2, 1, func(c *reconcile.Config) { c.SpareRecycleAfter = time.Minute })
	e.demand(0)
	e.pass()
	old := e.live()[0]
	e.launcher.mu.Lock()
	e.launcher.launchErr = errors.New("no room for a runner") // its replacement cannot start
	e.launcher.mu.Unlock()
	e.clock.Advance(reconcile.DefaultBootEstimate + time.Minute)
	_, _ = e.loop.Reconcile(e.ctx) // the replacement's launch fails
	assert.Empty(t, e.attempt(old.ID).LastMessage, "waits for a replacement")
	e.clock.Advance(31 * time.Second)
	_, _ = e.loop.Reconcile(e.ctx)
	require.Eventually(t, e.launcher.proc(old.ID).wasStopped, 5*time.Second, time.Millisecond, "stopped after the grace")
}

func TestSparesScaleDownAndStop(t *testing.T) {
	e := spareEnv(t, 2, 3, func(c *reconcile.Config) { c.SpareRecycleAfter = time.Hour })
	var job int64
	e.demand(0)
	e.pass()
	for range 6 {
		e.runJobs(4, &job)
	}
	require.Greater(t, len(e.notBusy()), 1, "spares raised by the rate")
	// Seen online by GitHub: idle, as a scale-down wants them.
	for _, a := range e.live() {
		e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
	}
	e.clock.Advance(31 * time.Second)
	e.pass()
	require.Equal(t, len(e.live()), e.byState()[rm.StateIdle])

	// The rate forgets the ends (a minute): one spare is kept, the rest
	// scaled down, before any is due for recycling (90 s after its start
	// at the latest, whatever SpareRecycleAfter says).
	e.clock.Advance(33 * time.Second)
	e.demand(0)
	e.pass()
	e.pass()
	live := e.live()
	stopped := func() int {
		n := 0
		for _, a := range live {
			if e.launcher.proc(a.ID).wasStopped() {
				n++
				assert.False(t, e.target.has(a.RunnerName), "registration removed first")
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return stopped() == len(live)-1 }, 5*time.Second, time.Millisecond, "all spares but one scaled down")
	e.pass()
	require.Len(t, e.live(), 1)
	for _, a := range e.ended() {
		if !a.Job.Known() {
			assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind)
			assert.True(t, strings.Contains(a.Outcome.Detail, "scaled down"), a.Outcome.Detail)
		}
	}

	// A stop (drain) removes the last spare too, even one listening past
	// its recycling with no replacement yet.
	last := e.live()[0]
	require.Equal(t, rm.StateIdle, last.State)
	e.clock.Advance(last.StartedAt.Add(95 * time.Second).Sub(e.clock.Now())) // expired, in its grace
	e.loop.SetDraining(true)
	e.pass()
	require.Eventually(t, e.launcher.proc(last.ID).wasStopped, 5*time.Second, time.Millisecond)
	e.pass()
	assert.Empty(t, e.live())
}

// A runner whose job completed but whose process has not exited yet runs
// no job: while a spare takes the next one, GitHub is still told max.
func TestSparesCapacityWhileARunnerExits(t *testing.T) {
	e := spareEnv(t, 2, 2, nil)
	e.demand(0)
	e.pass()
	e.demand(2, started(e.notBusy()[0].RunnerName, 1))
	e.pass()
	e.demand(2, started(e.notBusy()[0].RunnerName, 2))
	e.pass()
	require.Equal(t, 2, e.byState()[rm.StateBusy])
	require.NotEmpty(t, e.notBusy(), "a spare beside the two jobs")
	var done rm.Attempt
	for _, a := range e.live() {
		if a.State == rm.StateBusy && a.Job.ID == jobKey(1) {
			done = a
		}
	}
	// Job 1 completes; GitHub assigns job 3 at once and a spare takes it,
	// before job 1's runner exits.
	e.demand(2, completed(done.RunnerName, 1), started(e.notBusy()[0].RunnerName, 3))
	e.pass()
	assert.Equal(t, 3, e.byState()[rm.StateBusy], "job 1's runner is still busy in the journal")
	assert.Equal(t, 2, e.loop.Capacity(), "two jobs run: GitHub is told max, not the busy runners")
}

// A loop whose only runners are spares waits as an idle one does (their
// exits nudge it), woken by their deadlines: here, the recycling.
func TestSparesAloneKeepTheLoopIdle(t *testing.T) {
	e := spareEnv(t, 2, 1, nil)
	e.demand(0)
	res := e.pass()
	require.Len(t, e.live(), 1)
	assert.Equal(t, reconcile.DefaultIdleRequeue, res.RequeueAfter, "not the active cadence")
	e.clock.Advance(reconcile.DefaultIdleRequeue)
	res = e.pass()
	// Due 90 s after its start: listening from its boot (10 s by default)
	// it would be due at 100 s, past the latest recycling its strict bound
	// allows (20 s before it is stopped whatever happens, at 110 s).
	assert.Equal(t, 90*time.Second-reconcile.DefaultIdleRequeue, res.RequeueAfter,
		"next: when the spare is due for recycling")
}

// TestSparesSizedByTheDay: a policy whose spares are sized by the day
// (the default) keeps one while quiet and grows with a burst, at most its
// max (and rm.MaxAutoSpares).
func TestSparesSizedByTheDay(t *testing.T) {
	e := spareEnv(t, 4, rm.SpareAuto, nil)
	e.demand(0)
	e.pass()
	ps := e.loop.Status().Policies[0]
	assert.Equal(t, 1, ps.SpareTarget, "one while quiet")
	assert.True(t, ps.SpareAuto)
	assert.Equal(t, 8, ps.SpareCap, "at most twice max")
	require.Len(t, e.live(), 1, "the spare is launched")

	e.demand(4)
	for range 3 {
		e.pass()
	}
	ps = e.loop.Status().Policies[0]
	assert.Greater(t, ps.SpareTarget, 1, "a burst grows it")
	assert.LessOrEqual(t, len(e.live()), 4+8)
	assert.Greater(t, len(e.live()), 4, "spares beside the jobs' runners")
	assert.Equal(t, 8, rm.AutoSpares(100), "and never more than MaxAutoSpares")

	// A backlog GitHub holds beyond the capacity: a spare for each queued
	// job at once, before any job ends.
	e.loop.ReportDemand(rm.Demand{Wanted: 4, Queued: 30, At: e.clock.Now()})
	e.pass()
	assert.Equal(t, 8, e.loop.Status().Policies[0].SpareTarget, "the backlog asks the cap")
}

// TestSparesHostBound: the host's bound on spares holds whatever the
// policies ask, and the status says why they stop there.
func TestSparesHostBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound int
		want  int
		note  string
	}{
		{"two", 2, 2, "spares: the host keeps 2 warm spares at most"},
		{"none", -1, 0, "spares: the host keeps 0 warm spares at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := spareEnv(t, 10, 5, func(c *reconcile.Config) { c.Admission = &reconcile.Admission{MaxSpares: tc.bound} })
			e.demand(10)
			for range 4 {
				e.pass()
			}
			ps := e.loop.Status().Policies[0]
			assert.Equal(t, 5, ps.SpareTarget, "the policy asks its cap")
			assert.Equal(t, 10+tc.want, len(e.live()), "the jobs' runners and the spares the host allows")
			assert.Equal(t, tc.want, ps.Spares)
			assert.Contains(t, ps.SpareNote, tc.note)
		})
	}
}
