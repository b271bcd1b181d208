package reconcile_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestAdmissionMaxJobs(t *testing.T) {
	adm := &reconcile.Admission{MaxJobs: 3}
	t.Run("Decide", func(t *testing.T) {
		_, ok := adm.Decide(reconcile.Ask{Jobs: 2, Max: 10})
		assert.True(t, ok, "below the host's bound")
		r, ok := adm.Decide(reconcile.Ask{Jobs: 3, Live: 0, Max: 10})
		assert.False(t, ok)
		assert.Equal(t, status.RefusedMaxJobs, r.Reason)
		assert.Equal(t, "max_jobs: host max_jobs 3: 3 jobs at once on this host", r.String())
	})
	t.Run("PolicyMaxFirst", func(t *testing.T) {
		r, _ := adm.Decide(reconcile.Ask{Jobs: 3, Live: 2, Max: 2})
		assert.Equal(t, status.RefusedMax, r.Reason, "the policy's own max is the nearer bound")
	})
	t.Run("Capacity", func(t *testing.T) {
		assert.Equal(t, 3, adm.Capacity(reconcile.Ask{Jobs: 1, Live: 1, Max: 10}), "its live one and the host's two left")
		assert.Equal(t, 1, adm.Capacity(reconcile.Ask{Jobs: 4, Live: 1, Max: 10}), "over the bound: its live ones only")
	})
	t.Run("NoBound", func(t *testing.T) {
		_, ok := (&reconcile.Admission{}).Decide(reconcile.Ask{Jobs: 1000, Max: 1001})
		assert.True(t, ok, "0: no bound")
	})
}

// roomTarget is a fake target whose demand source is told each pass's
// room, as a fleet policy's source is.
type roomTarget struct {
	*fakeTarget
	mu    sync.Mutex
	rooms []rm.Room
}

func (r *roomTarget) ObserveRoom(room rm.Room) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rooms = append(r.rooms, room)
}

func (r *roomTarget) last() rm.Room {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rooms[len(r.rooms)-1]
}

// TestHostMaxJobsAcrossLoops: the host's bound holds across its loops,
// a host policy's launches and a fleet policy's published room alike, and
// the refusal says which bound it is.
func TestHostMaxJobsAcrossLoops(t *testing.T) {
	adm := &reconcile.Admission{MaxJobs: 3}
	e := newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 10).Active(),
		func(c *reconcile.Config) { c.Admission = adm })
	e.demand(2)
	e.pass()
	require.Len(t, e.live(), 2)

	// Another target's loop on the same host, sharing its admission, whose
	// source is told the loop's room as a fleet policy's is (a fleet
	// policy needs PostgreSQL: simulate/fleet runs one).
	fleetPol := storetest.NewPolicy().Name("fleet").Repository("acme/repo").Autoscale("fleet", 10).Host(e.host.ID).Active().Build()
	require.NoError(t, e.st.InsertPolicy(e.ctx, fleetPol))
	ft := &roomTarget{fakeTarget: newFakeTarget()}
	cfg := e.cfg
	cfg.Target, cfg.Policies = reconcile.Target{Registrar: ft, Demand: ft}, []rm.Policy{fleetPol}
	fl, err := reconcile.NewLoop(cfg)
	require.NoError(t, err)
	t.Cleanup(fl.Close)
	fl.ReportDemand(rm.Demand{Wanted: 5, At: e.clock.Now()})
	_, err = fl.Reconcile(e.ctx)
	require.NoError(t, err)

	fleetLive, err := e.st.ActiveAttempts(e.ctx, fleetPol.ID)
	require.NoError(t, err)
	assert.Len(t, fleetLive, 1, "the host runs 2 of the other policy: one more reaches max_jobs 3")
	assert.Equal(t, 1, ft.last().Capacity, "the room published to the fleet is cut by the host's bound")
	assert.Equal(t, 1, fl.Capacity())
	ps := fl.Status().Policies[0]
	assert.True(t, strings.HasPrefix(ps.LastRefusal, "max_jobs: host max_jobs 3"), ps.LastRefusal)
	assert.True(t, strings.HasPrefix(ps.WaitReason, "max_jobs: host max_jobs 3"), ps.WaitReason)

	// The host policy is held too, though far below its own max.
	e.demand(6)
	e.pass()
	assert.Len(t, e.live(), 2)
	assert.Equal(t, 2, e.loop.Capacity())
	assert.True(t, strings.HasPrefix(e.loop.Status().Policies[0].LastRefusal, "max_jobs: "), e.loop.Status().Policies[0].LastRefusal)

	// A runner of the host policy runs its job and ends: the slot goes to
	// whichever loop asks.
	a := e.live()[0]
	e.demand(2, started(a.RunnerName, 1))
	e.pass()
	e.launcher.proc(a.ID).exit(0)
	e.demand(1, completed(a.RunnerName, 1))
	e.pass()
	require.Equal(t, rm.StateFinished, e.attempt(a.ID).State)
	_, err = fl.Reconcile(e.ctx)
	require.NoError(t, err)
	fleetLive, err = e.st.ActiveAttempts(e.ctx, fleetPol.ID)
	require.NoError(t, err)
	assert.Len(t, fleetLive, 2)
	assert.Len(t, e.live(), 1)
	assert.Equal(t, 2, ft.last().Capacity)
}

// TestHostMaxJobsBoundsSpares: a warm spare beyond the host's jobs bound
// could never take a job, so the spares stop where jobs and spares reach it.
func TestHostMaxJobsBoundsSpares(t *testing.T) {
	e := spareEnv(t, 10, 5, func(c *reconcile.Config) { c.Admission = &reconcile.Admission{MaxJobs: 4} })
	e.demand(3)
	for range 4 {
		e.pass()
	}
	ps := e.loop.Status().Policies[0]
	assert.Len(t, e.live(), 4, "3 jobs' runners and 1 spare")
	assert.Equal(t, 1, ps.Spares)
	assert.Contains(t, ps.SpareNote, "host max_jobs 4")
}
