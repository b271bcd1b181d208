package status_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleetSets is a real SQLite journal with a fleet scale set's lease,
// shares and rooms beside it, as a fleet store would read them: only the
// boundary is stubbed. Its fleet policies are those named in fleet (the
// SQLite journal keeps none).
type fleetSets struct {
	store.Store
	store.FleetSets // the writes: never called here
	fleet           map[rm.PolicyID]bool
	lease           *store.FleetLease
	shares          []store.FleetShare
	rooms           []store.FleetRoom
}

func (f *fleetSets) Policies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := f.Store.Policies(ctx)
	for i := range ps {
		ps[i].Fleet = f.fleet[ps[i].ID]
	}
	return ps, err
}

func (f *fleetSets) FleetLease(context.Context, rm.PolicyID) (store.FleetLease, error) {
	if f.lease == nil {
		return store.FleetLease{}, store.ErrNotFound
	}
	return *f.lease, nil
}

func (f *fleetSets) FleetShares(context.Context, rm.PolicyID) ([]store.FleetShare, error) {
	return f.shares, nil
}

func (f *fleetSets) FleetRooms(context.Context, rm.PolicyID) ([]store.FleetRoom, error) {
	return f.rooms, nil
}

func TestFleetSet(t *testing.T) {
	ctx := t.Context()
	db := sqlitetest.MustOpen(t)
	now := storetest.Now()
	alpha := storetest.NewHost().Name("alpha").Build()
	beta := storetest.NewHost().Name("beta").Build()
	for _, h := range []rm.Host{alpha, beta} {
		require.NoError(t, db.PutHost(ctx, h))
	}
	home := storetest.NewPolicy().Name("home").Host(alpha.ID).Autoscale("home", 4).Build()
	mine := storetest.NewPolicy().Name("mine").Host(beta.ID).Autoscale("mine", 1).Build()
	for _, p := range []rm.Policy{home, mine} {
		require.NoError(t, db.InsertPolicy(ctx, p))
	}
	job := rm.PendingJob{ID: "77", Name: "build", Assigned: true}
	st := &fleetSets{Store: db, fleet: map[rm.PolicyID]bool{home.ID: true},
		lease: &store.FleetLease{Policy: home.ID, Holder: alpha.ID, Token: 3, ExpiresAt: now.Add(8 * time.Second), Left: 8 * time.Second},
		shares: []store.FleetShare{
			{Policy: home.ID, Host: beta.ID, Wanted: 1, Spares: 1, Placed: []store.FleetPlacement{{Job: job, Why: "least loaded"}}},
			{Policy: home.ID, Host: alpha.ID, Wanted: 2},
		},
		rooms: []store.FleetRoom{{Policy: home.ID, Host: alpha.ID, Capacity: 2, Busy: 2}, {Policy: home.ID, Host: beta.ID, Capacity: 3}},
	}

	s, err := status.FromJournal(ctx, st, beta.ID, now)
	require.NoError(t, err)
	require.Len(t, s.Policies, 2, "a fleet policy is every host's")
	byName := map[string]status.Policy{}
	for _, p := range s.Policies {
		byName[p.Name] = p
	}
	assert.False(t, byName["mine"].Fleet)
	assert.Nil(t, byName["mine"].FleetSet)
	ps := byName["home"]
	require.True(t, ps.Fleet)
	require.NotNil(t, ps.FleetSet)
	assert.Equal(t, "held by alpha; alpha 2 jobs (full), beta 1 job (+1 spare)", ps.FleetSet.Summary())
	assert.Equal(t, int64(3), ps.FleetSet.Token)
	require.Len(t, ps.FleetSet.Shares, 2)
	assert.Equal(t, []status.PlacedJob{{ID: "77", Name: "build", Why: "least loaded"}}, ps.FleetSet.Shares[1].Placed)

	require.Len(t, s.Jobs, 1, "the placed job is in the jobs view")
	j := s.Jobs[0]
	assert.Equal(t, []any{"77", status.JobAssignedToTarget, home.ID, beta.ID, "beta", "least loaded"},
		[]any{j.ID, j.State, j.Policy, j.Host, j.HostName, j.PlacedWhy})

	t.Run("DaemonsJob", func(t *testing.T) {
		// A job the holder's daemon lists as waiting is marked, not doubled.
		d := status.Status{Policies: []status.Policy{{ID: home.ID, Name: "home", Fleet: true}},
			Jobs: []status.Job{{ID: "77", State: status.JobAssignedToTarget, Policy: home.ID, PolicyName: "home", WaitReason: "runner starting"}}}
		got, err := d.WithFleetSets(ctx, st)
		require.NoError(t, err)
		require.Len(t, got.Jobs, 1)
		assert.Equal(t, []any{"beta", "least loaded", "runner starting"}, []any{got.Jobs[0].HostName, got.Jobs[0].PlacedWhy, got.Jobs[0].WaitReason})
		assert.Nil(t, d.Policies[0].FleetSet, "the status it was given is not changed")
	})

	t.Run("Lease", func(t *testing.T) {
		for name, tt := range map[string]struct {
			lease *store.FleetLease
			want  string
		}{
			"None":    {nil, "no host holds its session yet; "},
			"Expired": {&store.FleetLease{Holder: alpha.ID, Token: 3, ExpiresAt: now.Add(-2 * time.Second), Left: -2 * time.Second}, "held by alpha, lease expired: the next host to look takes it; "},
		} {
			t.Run(name, func(t *testing.T) {
				lease := st.lease
				st.lease = tt.lease
				defer func() { st.lease = lease }()
				f, err := status.FleetSetOf(ctx, st, home.ID, map[rm.HostID]string{alpha.ID: "alpha"})
				require.NoError(t, err)
				assert.Contains(t, f.Summary(), tt.want)
			})
		}
	})

	t.Run("JSON", func(t *testing.T) {
		raw, err := json.Marshal(ps)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(raw, &got))
		assert.Equal(t, true, got["fleet"])
		set := got["fleet_set"].(map[string]any)
		assert.Equal(t, "alpha", set["holder_name"])
		assert.Equal(t, false, set["expired"])
	})

	t.Run("NotAFleetStore", func(t *testing.T) {
		f, err := status.FleetSetOf(ctx, db, home.ID, nil)
		require.NoError(t, err)
		assert.Nil(t, f)
	})
}
