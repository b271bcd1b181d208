package reconcile

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

type sizedHost uint64

func (h sizedHost) Memory() (uint64, uint64, error) { return uint64(h), uint64(h), nil }

// One admission serves every loop of a host: a job of one loop that fits
// only without another loop's spare is admitted, and the spare is asked
// to yield (its loop nudged); a spare is admitted only beside everything
// committed; and the capacity told to GitHub leaves spares out.
func TestSessionSpareYieldsToAnotherLoopsJob(t *testing.T) {
	const gib = 1 << 30
	ctx := context.Background()
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(ctx, host))
	a := storetest.NewPolicy().Name("a").Repository("acme/a").Autoscale("a", 2).Spare(1).MemoryEstimate(gib).Host(host.ID).Build()
	b := storetest.NewPolicy().Name("b").Repository("acme/b").Autoscale("b", 4).MemoryEstimate(gib).Host(host.ID).Build()
	require.NoError(t, st.InsertPolicy(ctx, a))
	require.NoError(t, st.InsertPolicy(ctx, b))
	spare := storetest.NewAttempt().ID(rm.NewAttemptID()).Policy(a.ID).Host(host.ID).State(rm.StateIdle).ProcessID(11).ProcessStart(1).Build()
	require.NoError(t, st.RecordAttempt(ctx, spare))
	for range 3 {
		busy := storetest.NewAttempt().ID(rm.NewAttemptID()).Policy(b.ID).Host(host.ID).State(rm.StateBusy).ProcessID(12).ProcessStart(1).Build()
		require.NoError(t, st.RecordAttempt(ctx, busy))
	}
	tab := newTable()
	nudged := 0
	tab.with(spare.ID, func(r *runtime) { r.spare, r.spareCost, r.nudge = true, 256<<20, func() { nudged++ } })
	adm := &Admission{Memory: sizedHost(4 * gib)}
	deps := admitDeps{st: st, host: host.ID, tab: tab}

	sess, err := adm.begin(ctx, deps)
	require.NoError(t, err)
	assert.Equal(t, uint64(3*gib+256<<20), sess.committed, "three jobs, and the spare at its idle cost")
	sim := sess.withoutSpares()
	assert.Equal(t, 4, sim.capacity(gib, 3, 4), "the capacity counts the spare's memory free")
	_, ok := sess.admitSpare(256<<20, 1, 1)
	assert.False(t, ok, "a second spare is refused by its cap")
	_, ok = sess.admit(gib, 3, 4)
	require.True(t, ok, "the fourth job fits without the spare")
	sess.end()
	rt, _ := tab.get(spare.ID)
	assert.True(t, rt.yield, "the spare yields")
	assert.Equal(t, 1, nudged, "its loop is nudged")

	// While it is on its way out it counts at its own memory, and is
	// asked nothing more.
	sess, err = adm.begin(ctx, deps)
	require.NoError(t, err)
	assert.Equal(t, uint64(3*gib+256<<20), sess.committed)
	assert.Zero(t, sess.spareCommitted)
	sess.end()
	assert.Equal(t, 1, nudged)
}
