package status_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// The journal's status of one host counts, of a fleet policy, only the
// runners of that host: the others' are theirs.
func TestFromJournalFleetPolicyOfOneHost(t *testing.T) {
	ctx := t.Context()
	st, err := postgres.Open(ctx, pgtest.Start(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	a, b := storetest.NewHost().Build(), storetest.NewHost().Build()
	p := storetest.NewPolicy().Host(a.ID).Autoscale("shared", 4).Fleet().Build()
	require.NoError(t, st.InsertPolicy(ctx, p))
	for _, at := range []rm.Attempt{
		storetest.NewAttempt().Policy(p.ID).Host(a.ID).State(rm.StateBusy).Build(),
		storetest.NewAttempt().Policy(p.ID).Host(b.ID).State(rm.StateIdle).Build(),
		storetest.NewAttempt().Policy(p.ID).Host(b.ID).State(rm.StateBusy).Build(),
	} {
		require.NoError(t, st.RecordAttempt(ctx, at))
	}
	for _, c := range []struct {
		host             rm.HostID
		live, busy, idle int
	}{{a.ID, 1, 1, 0}, {b.ID, 2, 1, 1}} {
		s, err := status.FromJournal(ctx, st, c.host, time.Now())
		require.NoError(t, err)
		require.Len(t, s.Policies, 1)
		ps := s.Policies[0]
		assert.Equal(t, [3]int{c.live, c.busy, c.idle}, [3]int{ps.Live, ps.Busy, ps.Idle})
		assert.Len(t, s.Attempts, c.live)
	}
}
