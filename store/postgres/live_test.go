package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestLiveAttempts(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	ctx := t.Context()
	a, b := storetest.NewHost().Build(), storetest.NewHost().Build()
	pa1 := storetest.NewPolicy().Host(a.ID).Build()
	pa2 := storetest.NewPolicy().Host(a.ID).Build()
	pb := storetest.NewPolicy().Host(b.ID).Build()
	for _, p := range []rm.Policy{pa1, pa2, pb} {
		require.NoError(t, s.InsertPolicy(ctx, p))
	}
	base := storetest.Now().Add(-1e12)
	var want []rm.AttemptID
	for i, c := range []struct {
		p  rm.PolicyID
		st rm.AttemptState
	}{{pa1.ID, rm.StateBusy}, {pb.ID, rm.StateIdle}, {pa2.ID, rm.StatePending}, {pa1.ID, rm.StateFinished}, {pa2.ID, rm.StateFailed}, {pa2.ID, rm.StateIdle}} {
		at := storetest.NewAttempt().Policy(c.p).State(c.st).CreatedAt(base.Add(1e9 * time.Duration(i))).Build()
		require.NoError(t, s.RecordAttempt(ctx, at))
		if c.p != pb.ID && c.st.Live() {
			want = append(want, at.ID)
		}
	}
	got, err := s.LiveAttempts(ctx, a.ID)
	require.NoError(t, err)
	var ids []rm.AttemptID
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	assert.Equal(t, want, ids, "host a's live attempts, oldest first, none of b's")
	none, err := s.LiveAttempts(ctx, rm.NewHostID())
	require.NoError(t, err)
	assert.Empty(t, none)

	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SET enable_seqscan = off")
	require.NoError(t, err)
	assert.Contains(t, plan(t, conn, postgres.LiveAttemptsQuery, a.ID.String(), rm.RunnerNamePrefix(a.ID)+"%"), "attempts_live")
}

// A fleet policy's attempts run on every host: each is the host's whose
// runner name it bears, not its policy's adder's.
func TestLiveAttemptsOfAFleetPolicy(t *testing.T) {
	s, err := open(t, pgtest.Start(t))
	require.NoError(t, err)
	ctx := t.Context()
	a, b := storetest.NewHost().Build(), storetest.NewHost().Build()
	fleet := storetest.NewPolicy().Host(a.ID).Autoscale("shared", 4).Fleet().Build()
	own := storetest.NewPolicy().Host(b.ID).Build()
	for _, p := range []rm.Policy{fleet, own} {
		require.NoError(t, s.InsertPolicy(ctx, p))
	}
	onA := storetest.NewAttempt().Policy(fleet.ID).Host(a.ID).State(rm.StateBusy).Build()
	onB := storetest.NewAttempt().Policy(fleet.ID).Host(b.ID).State(rm.StateIdle).Build()
	ownB := storetest.NewAttempt().Policy(own.ID).Host(b.ID).State(rm.StateBusy).Build()
	for _, at := range []rm.Attempt{onA, onB, ownB} {
		require.NoError(t, s.RecordAttempt(ctx, at))
	}
	ids := func(h rm.HostID) []rm.AttemptID {
		got, err := s.LiveAttempts(ctx, h)
		require.NoError(t, err)
		var out []rm.AttemptID
		for _, x := range got {
			out = append(out, x.ID)
		}
		return out
	}
	assert.ElementsMatch(t, []rm.AttemptID{onA.ID}, ids(a.ID), "the adder runs only its own runners of the fleet policy")
	assert.ElementsMatch(t, []rm.AttemptID{onB.ID, ownB.ID}, ids(b.ID), "another host's runners of the fleet policy are its own")
}
