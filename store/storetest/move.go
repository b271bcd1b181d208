package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// MovePolicy hands a policy over: its live attempts go with it to the
// new owner's LiveAttempts once there are none; while there are, it is
// refused with their count and nothing changes.
func testMovePolicy(t *testing.T, s store.Store) {
	ctx := t.Context()
	from, to := NewHost().Build(), NewHost().Build()
	for _, h := range []rm.Host{from, to} {
		require.NoError(t, s.PutHost(ctx, h))
	}
	p := mustPolicy(t, s, NewPolicy().Name("moving").Host(from.ID))
	live := []rm.Attempt{
		NewAttempt().Policy(p.ID).Host(from.ID).State(rm.StateBusy).Build(),
		NewAttempt().Policy(p.ID).Host(from.ID).State(rm.StateIdle).Build(),
	}
	mustRecord(t, s, live...)
	mustRecord(t, s, NewAttempt().Policy(p.ID).Host(from.ID).State(rm.StateFinished).Build())

	err := s.MovePolicy(ctx, p.ID, to.ID)
	var le *store.LiveAttemptsError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, store.ErrConflict)
	assert.Equal(t, 2, le.Live, "the refusal counts the live attempts")
	assert.Equal(t, p.ID, le.Policy)
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, from.ID, got.Host, "a refused move changes nothing")

	for _, a := range live {
		ended, err := a.Conclude(rm.Outcome{Kind: rm.CompletedJob}, Now())
		require.NoError(t, err)
		mustRecord(t, s, ended)
	}
	before := got.UpdatedAt
	require.NoError(t, s.MovePolicy(ctx, p.ID, to.ID))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, to.ID, got.Host)
	assert.False(t, got.UpdatedAt.Before(before), "the move stamps UpdatedAt")
	assert.Equal(t, normTime(p.CreatedAt), normTime(got.CreatedAt), "the move keeps CreatedAt")
	require.NoError(t, s.MovePolicy(ctx, p.ID, to.ID), "moving to its owner is no change")

	mustRecord(t, s, NewAttempt().Policy(p.ID).Host(to.ID).State(rm.StateStarting).Build())
	mine, err := s.LiveAttempts(ctx, to.ID)
	require.NoError(t, err)
	assert.Len(t, mine, 1, "the new owner's attempts are its own")
	theirs, err := s.LiveAttempts(ctx, from.ID)
	require.NoError(t, err)
	assert.Empty(t, theirs)
}

func testMovePolicyNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := NewHost().Build()
	require.NoError(t, s.PutHost(ctx, h))
	p := mustPolicy(t, s, NewPolicy().Host(h.ID))
	require.ErrorIs(t, s.MovePolicy(ctx, rm.NewPolicyID(), h.ID), store.ErrNotFound, "no such policy")
	require.ErrorIs(t, s.MovePolicy(ctx, p.ID, rm.NewHostID()), store.ErrNotFound, "no such host")
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, h.ID, got.Host)
}
