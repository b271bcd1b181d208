package policyedit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleetJournal is a real SQLite journal that passes for a fleet store: it
// keeps each policy's Fleet beside the journal (which is one host's and
// keeps none) and has the FleetSets methods, which policyedit never calls.
// Only the boundary is stubbed.
type fleetJournal struct {
	store.Store
	store.FleetSets
	mu    sync.Mutex
	fleet map[rm.PolicyID]bool
}

func newFleetJournal(t *testing.T) *fleetJournal {
	return &fleetJournal{Store: sqlitetest.MustOpen(t), fleet: map[rm.PolicyID]bool{}}
}

func (j *fleetJournal) keep(p rm.Policy) rm.Policy {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fleet[p.ID] = p.Fleet
	p.Fleet = false
	return p
}

func (j *fleetJournal) mark(p rm.Policy) rm.Policy {
	j.mu.Lock()
	defer j.mu.Unlock()
	p.Fleet = j.fleet[p.ID]
	return p
}

func (j *fleetJournal) InsertPolicy(ctx context.Context, p rm.Policy) error {
	return j.Store.InsertPolicy(ctx, j.keep(p))
}

func (j *fleetJournal) UpdatePolicy(ctx context.Context, p rm.Policy) error {
	return j.Store.UpdatePolicy(ctx, j.keep(p))
}

func (j *fleetJournal) ApplyPolicies(ctx context.Context, c store.PolicyChanges) error {
	for i := range c.Update {
		c.Update[i] = j.keep(c.Update[i])
	}
	for i := range c.Insert {
		c.Insert[i] = j.keep(c.Insert[i])
	}
	return j.Store.ApplyPolicies(ctx, c)
}

func (j *fleetJournal) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	p, err := j.Store.Policy(ctx, id)
	return j.mark(p), err
}

func (j *fleetJournal) PolicyByName(ctx context.Context, name string) (rm.Policy, error) {
	p, err := j.Store.PolicyByName(ctx, name)
	return j.mark(p), err
}

func (j *fleetJournal) Policies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := j.Store.Policies(ctx)
	for i := range ps {
		ps[i] = j.mark(ps[i])
	}
	return ps, err
}

func TestFleetPolicyNeedsAFleetStore(t *testing.T) {
	st, host, ps := journal(t)
	const want = "must be PostgreSQL ([store] url; docs/fleet.md)"
	_, err := policyedit.Spec{Name: "home", Repo: "octo/app", ScaleSet: "home", Max: 4, Fleet: true}.Insert(t.Context(), st, host, backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), want)
	assert.NotContains(t, names(t, st), "home", "nothing written")

	_, _, err = policyedit.Edit{Fleet: ptr(true)}.Write(t.Context(), st, ps["a"])
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), want)

	_, err = policyedit.Make(t.Context(), st, host, file(policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "a", Max: 2, Fleet: true}))
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "policies.toml: invalid: policy \"a\" is a fleet policy")

	p, err := policyedit.Spec{Name: "home", Repo: "octo/app", ScaleSet: "home", Max: 4, Fleet: true}.Insert(t.Context(), newFleetJournal(t), host, backend.All())
	require.NoError(t, err, "a fleet store takes it")
	assert.True(t, p.Fleet)
	assert.Equal(t, host, p.Host, "the host that added it")
}

func TestReadFileFleet(t *testing.T) {
	f, err := policyedit.ReadFile(writePolicies(t, "[[policy]]\nname = \"home\"\nrepo = \"o/r\"\nscale_set = \"home\"\nmax = 6\nfleet = true\n"), backend.All())
	require.NoError(t, err)
	require.Len(t, f.Policy, 1)
	assert.True(t, f.Policy[0].Fleet)
	p, err := f.Policy[0].Build(rm.NewHostID(), backend.All())
	require.NoError(t, err)
	assert.True(t, p.Fleet)

	_, err = policyedit.ReadFile(writePolicies(t, "[[policy]]\nname = \"gpu\"\nrepo = \"o/r\"\nlabels = [\"gpu\"]\nfleet = true\n"), backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "policies.toml:1: invalid: policy \"gpu\": a fleet policy serves a scale set")
}

// Every host's file may change a fleet policy, which keeps the host that
// added it; only that host's file removes it.
func TestPlanFleetPolicy(t *testing.T) {
	st := newFleetJournal(t)
	alpha, beta := rm.NewHostID(), rm.NewHostID()
	home := policyedit.Spec{Name: "home", Repo: "octo/app", ScaleSet: "home", Max: 4, Fleet: true}
	plan, err := policyedit.Make(t.Context(), st, alpha, file(home))
	require.NoError(t, err)
	require.NoError(t, plan.Apply(t.Context(), st, time.Now()))
	added := names(t, st)["home"]
	require.True(t, added.Fleet)

	for name, tt := range map[string]struct {
		host rm.HostID
		want []policyedit.Op
	}{"AnotherHostsFile": {beta, nil}, "ItsAddersFile": {alpha, []policyedit.Op{policyedit.Remove}}} {
		t.Run("Unlisted/"+name, func(t *testing.T) {
			plan, err := policyedit.Make(t.Context(), st, tt.host, file())
			require.NoError(t, err)
			var ops []policyedit.Op
			for _, s := range plan {
				ops = append(ops, s.Op)
			}
			assert.Equal(t, tt.want, ops)
		})
	}

	t.Run("ChangedByAnotherHost", func(t *testing.T) {
		more := home
		more.Max = 9
		plan, err := policyedit.Make(t.Context(), st, beta, file(more))
		require.NoError(t, err)
		require.Len(t, plan, 1)
		assert.Equal(t, []string{"max 4 → 9"}, plan[0].Changes)
		assert.Equal(t, alpha, plan[0].Policy.Host, "the host that added it stays")
	})

	t.Run("MadeAHostsPolicy", func(t *testing.T) {
		mine := home
		mine.Fleet = false
		plan, err := policyedit.Make(t.Context(), st, beta, file(mine))
		require.NoError(t, err)
		require.Len(t, plan, 1)
		assert.Equal(t, []string{"fleet yes → no", "host " + alpha.String() + " → " + beta.String() + " (this host)"}, plan[0].Changes)
		assert.Equal(t, beta, plan[0].Policy.Host, "the file's host serves it")
	})

	t.Run("FlipRefusedWhileRunnersLive", func(t *testing.T) {
		require.NoError(t, st.RecordAttempt(t.Context(), storetest.NewAttempt().Policy(added.ID).Host(beta).State(rm.StateIdle).Build()))
		mine := home
		mine.Fleet = false
		_, err := policyedit.Make(t.Context(), st, alpha, file(mine))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "policy home has 1 live runner(s): pause it (`runner-manager policy pause home`)")
		assert.Contains(t, err.Error(), "then make it one host's")

		_, _, err = policyedit.Edit{Fleet: ptr(false)}.Write(t.Context(), st, added)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nothing was changed")
		assert.True(t, names(t, st)["home"].Fleet)

		_, changes, err := policyedit.Edit{Max: ptr(5)}.Write(t.Context(), st, added)
		require.NoError(t, err, "other changes go on while runners live")
		assert.Equal(t, []string{"max 4 → 5"}, changes)
	})
}

func TestEditFleet(t *testing.T) {
	st := newFleetJournal(t)
	host := rm.NewHostID()
	p := storetest.NewPolicy().Name("home").Repository("octo/app").Host(host).Autoscale("home", 2).Build()
	require.NoError(t, st.InsertPolicy(t.Context(), p))
	got, changes, err := policyedit.Edit{Fleet: ptr(true)}.Write(t.Context(), st, p)
	require.NoError(t, err)
	assert.Equal(t, []string{"fleet no → yes"}, changes)
	assert.True(t, got.Fleet)
	assert.True(t, names(t, st)["home"].Fleet)

	classic := storetest.NewPolicy().Name("gpu").Repository("octo/app").Host(host).Labels("gpu").Build()
	_, err = policyedit.Edit{Fleet: ptr(true)}.Apply(classic)
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "a fleet policy serves a scale set")
}
