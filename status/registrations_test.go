package status_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// Each runner GitHub lists is marked with who registered it, from the
// journal: this host's and another host's attempts (by runner id, else by
// name), a host's leftover (its prefix, no live attempt), and unknown.
func TestWithOwners(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.MustOpen(t)
	alpha := storetest.NewHost().Name("alpha").Build()
	beta := storetest.NewHost().Name("beta").Build()
	for _, h := range []rm.Host{alpha, beta} {
		require.NoError(t, st.RegisterHost(ctx, store.FleetHost{Host: h}))
	}
	pa := storetest.NewPolicy().Name("home").Host(alpha.ID).Autoscale("home", 4).Build()
	pb := storetest.NewPolicy().Name("away").Host(beta.ID).Autoscale("away", 4).Build()
	for _, p := range []rm.Policy{pa, pb} {
		require.NoError(t, st.InsertPolicy(ctx, p))
	}
	busy := storetest.NewAttempt().Policy(pa.ID).Host(alpha.ID).State(rm.StateBusy).GitHubRunnerID(11).Build()
	idle := storetest.NewAttempt().Policy(pb.ID).Host(beta.ID).State(rm.StateIdle).Build() // matched by name
	ended := storetest.NewAttempt().Policy(pb.ID).Host(beta.ID).State(rm.StateFinished).GitHubRunnerID(22).Build()
	for _, a := range []rm.Attempt{busy, idle, ended} {
		require.NoError(t, st.RecordAttempt(ctx, a))
	}
	leftover := rm.RunnerName(alpha.ID, rm.NewAttemptID())

	s := status.Status{Host: alpha, Registrations: []status.ScopeRunners{{Scope: "repo:octo/app", Runners: []status.Registration{
		{ID: 11, Name: "renamed-at-github"}, // by id, whatever its name
		{ID: 21, Name: idle.RunnerName},
		{ID: 22, Name: ended.RunnerName},
		{ID: 31, Name: leftover},
		{ID: 41, Name: "laptop-runner"},
	}}}}
	got, err := s.WithOwners(ctx, st)
	require.NoError(t, err)
	require.Nil(t, s.Registrations[0].Runners[0].Owner, "the status given is not changed")
	var owners []string
	for _, r := range got.Registrations[0].Runners {
		require.NotNil(t, r.Owner, r.Name)
		owners = append(owners, r.Owner.String())
	}
	assert.Equal(t, []string{"this host", "host beta", "host beta", "this host", "unknown"}, owners)
	rs := got.Registrations[0].Runners
	assert.Equal(t, busy.ID, rs[0].Owner.Attempt)
	assert.Equal(t, rm.StateBusy, rs[0].Owner.State)
	assert.Equal(t, idle.ID, rs[1].Owner.Attempt)
	assert.Equal(t, pb.ID, rs[1].Owner.Policy)
	assert.True(t, rs[2].Owner.Attempt.IsZero(), "an ended attempt's runner still listed: the host's, no live attempt")
	assert.True(t, rs[3].Owner.Attempt.IsZero())
	assert.Equal(t, status.OwnerUnknown, rs[4].Owner.Kind)

	none, err := status.Status{}.WithOwners(ctx, st)
	require.NoError(t, err)
	assert.Nil(t, none.Registrations, "nothing listed: nothing read")
}
