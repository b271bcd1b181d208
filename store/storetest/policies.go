package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// policyNames lists the store's policies' names, by name.
func policyNames(t *testing.T, s store.Store) []string {
	t.Helper()
	ps, err := s.Policies(t.Context())
	require.NoError(t, err)
	names := []string{}
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return names
}

func testApplyPolicies(t *testing.T, s store.Store) {
	ctx := t.Context()
	keep := mustPolicy(t, s, NewPolicy().Name("keep").Max(1))
	gone := mustPolicy(t, s, NewPolicy().Name("gone"))
	moved := mustPolicy(t, s, NewPolicy().Name("moved"))
	ended := NewAttempt().Policy(gone.ID).State(rm.StateFinished).Build()
	mustRecord(t, s, ended)

	keep.Max = 3
	renamed := moved
	renamed.Name = "renamed"
	fresh := NewPolicy().Name("gone").Build() // takes the name of a policy deleted in the same change
	added := NewPolicy().Name("added").Build()
	require.NoError(t, s.ApplyPolicies(ctx, store.PolicyChanges{
		Delete: []rm.PolicyID{gone.ID},
		Update: []rm.Policy{keep, renamed},
		Insert: []rm.Policy{fresh, added},
	}))
	assert.Equal(t, []string{"added", "gone", "keep", "renamed"}, policyNames(t, s))
	got, err := s.Policy(ctx, keep.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Max)
	assert.Equal(t, normTime(keep.CreatedAt), normTime(got.CreatedAt), "an update keeps CreatedAt")
	got, err = s.PolicyByName(ctx, "gone")
	require.NoError(t, err)
	assert.Equal(t, fresh.ID, got.ID)
	_, err = s.Attempt(ctx, ended.ID)
	require.NoError(t, err, "a removed policy's ended attempts stay as history")
	removed, err := s.RemovedPolicies(ctx)
	require.NoError(t, err)
	require.Len(t, removed, 1)
	assert.Equal(t, gone.ID, removed[0].ID)

	require.NoError(t, s.ApplyPolicies(ctx, store.PolicyChanges{}), "no change is no error")
}

// A change that fails half-way leaves nothing applied: neither the
// changes before it nor those after.
func testApplyPoliciesAllOrNothing(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := mustPolicy(t, s, NewPolicy().Name("a").Max(1))
	b := mustPolicy(t, s, NewPolicy().Name("b").Max(1))
	busy := mustPolicy(t, s, NewPolicy().Name("busy"))
	mustRecord(t, s, NewAttempt().Policy(busy.ID).State(rm.StateBusy).Build())
	before, err := s.Policies(ctx)
	require.NoError(t, err)

	a2, b2 := a, b
	a2.Max, b2.Max = 4, 4
	taken := NewPolicy().Name("a").Build()
	missing := NewPolicy().Name("missing").Build()
	tests := map[string]struct {
		c    store.PolicyChanges
		want error
	}{
		"NameTaken": {store.PolicyChanges{
			Update: []rm.Policy{a2, b2}, Insert: []rm.Policy{NewPolicy().Name("new").Build(), taken},
		}, store.ErrConflict},
		"UpdateMissing": {store.PolicyChanges{
			Delete: []rm.PolicyID{a.ID}, Update: []rm.Policy{b2, missing}, Insert: []rm.Policy{NewPolicy().Name("new").Build()},
		}, store.ErrNotFound},
		"DeleteLive": {store.PolicyChanges{
			Delete: []rm.PolicyID{a.ID, busy.ID}, Update: []rm.Policy{b2},
		}, store.ErrConflict},
		"DeleteMissing": {store.PolicyChanges{
			Delete: []rm.PolicyID{a.ID, rm.NewPolicyID()}, Insert: []rm.Policy{NewPolicy().Name("new").Build()},
		}, store.ErrNotFound},
		"Invalid": {store.PolicyChanges{
			Delete: []rm.PolicyID{a.ID}, Update: []rm.Policy{b2}, Insert: []rm.Policy{NewPolicy().Name("new").Build(), NewPolicy().Name("no spaces").Build()},
		}, rm.ErrInvalid},
		"DuplicateInsert": {store.PolicyChanges{
			Update: []rm.Policy{a2}, Insert: []rm.Policy{NewPolicy().Name("twice").Build(), NewPolicy().Name("twice").Build()},
		}, store.ErrConflict},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, s.ApplyPolicies(ctx, tt.c), tt.want)
			after, err := s.Policies(ctx)
			require.NoError(t, err)
			require.Len(t, after, len(before), "nothing was added or removed")
			for i := range before {
				assert.Equal(t, normPolicy(before[i]), normPolicy(after[i]), "nothing was changed")
			}
		})
	}
}

func testIntegrityCheck(t *testing.T, s store.Store) {
	mustPolicy(t, s, NewPolicy())
	require.NoError(t, s.IntegrityCheck(t.Context()))
}
