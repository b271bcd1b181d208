package app_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleetStore stands a fleet store's boundary over the real SQLite journal
// the commands open: it keeps each policy's Fleet beside the journal
// (which keeps none) and answers the fleet reads status makes from a
// lease, shares and rooms the test sets. Its shared state outlives each
// command's store.
type fleetStore struct {
	mu     sync.Mutex
	fleet  map[rm.PolicyID]bool
	lease  *store.FleetLease
	shares []store.FleetShare
	rooms  []store.FleetRoom
}

// over serves every store the commands open through f.
func (f *fleetStore) over(t *testing.T) {
	t.Cleanup(app.SetStoreOpened(func(st store.Store) store.Store { return &fleetOver{Store: st, f: f} }))
}

type fleetOver struct {
	store.Store
	store.FleetSets // the writes: no command makes them
	f               *fleetStore
}

func (o *fleetOver) keep(p rm.Policy) rm.Policy {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	o.f.fleet[p.ID] = p.Fleet
	p.Fleet = false
	return p
}

func (o *fleetOver) mark(p rm.Policy) rm.Policy {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	p.Fleet = o.f.fleet[p.ID]
	return p
}

func (o *fleetOver) InsertPolicy(ctx context.Context, p rm.Policy) error {
	return o.Store.InsertPolicy(ctx, o.keep(p))
}

func (o *fleetOver) UpdatePolicy(ctx context.Context, p rm.Policy) error {
	return o.Store.UpdatePolicy(ctx, o.keep(p))
}

func (o *fleetOver) PolicyByName(ctx context.Context, name string) (rm.Policy, error) {
	p, err := o.Store.PolicyByName(ctx, name)
	return o.mark(p), err
}

func (o *fleetOver) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	p, err := o.Store.Policy(ctx, id)
	return o.mark(p), err
}

func (o *fleetOver) Policies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := o.Store.Policies(ctx)
	for i := range ps {
		ps[i] = o.mark(ps[i])
	}
	return ps, err
}

func (o *fleetOver) FleetLease(context.Context, rm.PolicyID) (store.FleetLease, error) {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	if o.f.lease == nil {
		return store.FleetLease{}, store.ErrNotFound
	}
	return *o.f.lease, nil
}

func (o *fleetOver) FleetShares(context.Context, rm.PolicyID) ([]store.FleetShare, error) {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	return o.f.shares, nil
}

func (o *fleetOver) FleetRooms(context.Context, rm.PolicyID) ([]store.FleetRoom, error) {
	o.f.mu.Lock()
	defer o.f.mu.Unlock()
	return o.f.rooms, nil
}

// A fleet policy needs a store the fleet shares: on the SQLite journal it
// is refused before anything is written, and the refusal says where to
// look.
func TestPolicyAddFleetRefusedOnSQLite(t *testing.T) {
	e := newEnv(t).noDataDir()
	stderr := e.fails(app.ExitInvalid, "policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4", "--fleet")
	assert.Contains(t, stderr, `policy "home" is a fleet policy (--fleet, fleet = true), served by every host sharing the store: that store must be PostgreSQL ([store] url; docs/fleet.md)`)
	_, err := os.Stat(e.dataDir)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written, not even the data dir")

	stderr = e.fails(app.ExitInvalid, "policy", "add", "gpu", "--repo", "octo/app", "--labels", "gpu", "--fleet")
	assert.Contains(t, stderr, "a fleet policy serves a scale set (--scale-set)")

	file := e.home + "/policies.toml"
	require.NoError(t, os.WriteFile(file, []byte("[[policy]]\nname = \"home\"\nrepo = \"octo/app\"\nscale_set = \"home\"\nmax = 4\nfleet = true\n"), 0o600))
	stderr = e.fails(app.ExitInvalid, "policy", "apply", file)
	assert.Contains(t, stderr, "[store] url; docs/fleet.md")
	_, err = os.Stat(e.dataDir)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written by apply either")

	require.NoError(t, os.Mkdir(e.dataDir, 0o700))
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4")
	stderr = e.fails(app.ExitInvalid, "policy", "edit", "home", "--fleet")
	assert.Contains(t, stderr, "[store] url; docs/fleet.md")
}

// What people see of a fleet policy: the fleet as its host in list and
// show, no move, who holds its session and each host's share in status,
// where each waiting job went in jobs.
func TestFleetPolicyView(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4")
	db := e.journal()
	home, err := db.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	alpha, err := db.Host(t.Context(), home.Host)
	require.NoError(t, err)
	beta := storetest.NewHost().Name("zulu").Build()
	require.NoError(t, db.PutHost(t.Context(), beta))
	now := storetest.Now()
	f := &fleetStore{fleet: map[rm.PolicyID]bool{home.ID: true},
		lease: &store.FleetLease{Policy: home.ID, Holder: alpha.ID, Token: 2, ExpiresAt: now.Add(9 * time.Second), Left: 9 * time.Second},
		shares: []store.FleetShare{
			{Policy: home.ID, Host: alpha.ID, Wanted: 2},
			{Policy: home.ID, Host: beta.ID, Wanted: 1, Spares: 1, Placed: []store.FleetPlacement{
				{Job: rm.PendingJob{ID: "4242", Name: "integration", Assigned: true}, Why: "fits 6.0GiB free of 3.0GiB expected"}}},
		},
		rooms: []store.FleetRoom{{Policy: home.ID, Host: alpha.ID, Capacity: 3, Busy: 2}, {Policy: home.ID, Host: beta.ID, Capacity: 2}},
	}
	f.over(t)

	assert.Regexp(t, `home\s+repo:octo/app scale-set=home\s+scale-set\s+fleet\s+4`, e.ok("policy", "list"))
	assert.Contains(t, e.ok("policy", "show", "home"), "host:             the fleet's: every host serves it (added by "+alpha.Name)
	show := e.ok("policy", "show", "home", "--json")
	checkSchema(t, docSchemas(t)["policy"], show, false)
	var pj map[string]any
	require.NoError(t, json.Unmarshal([]byte(show), &pj))
	assert.Equal(t, true, pj["fleet"])

	stderr := e.fails(app.ExitInvalid, "policy", "move", "home", "--host", "zulu")
	assert.Contains(t, stderr, `policy "home" is the fleet's: every host serves it; there is nothing to move`)

	out := e.ok("status")
	assert.Regexp(t, `home\s+fleet\s+0/4`, out)
	assert.Contains(t, out, "fleet home: held by "+alpha.Name+"; "+alpha.Name+" 2 jobs, zulu 1 job (+1 spare)")
	js := e.ok("status", "--json")
	checkSchema(t, docSchemas(t)["status"], js, false)
	var sj struct {
		Policies []struct {
			Fleet    bool `json:"fleet"`
			FleetSet struct {
				HolderName string `json:"holder_name"`
				Shares     []struct {
					HostName string `json:"host_name"`
					Room     *int   `json:"room"`
				} `json:"shares"`
			} `json:"fleet_set"`
		} `json:"policies"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &sj))
	require.Len(t, sj.Policies, 1)
	assert.True(t, sj.Policies[0].Fleet)
	assert.Equal(t, alpha.Name, sj.Policies[0].FleetSet.HolderName)
	require.Len(t, sj.Policies[0].FleetSet.Shares, 2)
	assert.Equal(t, 2, *sj.Policies[0].FleetSet.Shares[1].Room)

	jobs := e.ok("jobs")
	assert.Regexp(t, `integration\s+-\s+home\s+assigned\s+-\s+on zulu \(fits 6\.0GiB free of 3\.0GiB expected\): runner starting`, jobs)
	checkSchema(t, docSchemas(t)["jobs"], e.ok("jobs", "--json"), false)

	t.Run("FromDaemon", func(t *testing.T) {
		serveDaemon(t, e.dataDir, &fixedDaemon{refreshed: make(chan struct{}, 1), st: status.Status{At: now, Host: alpha,
			Policies: []status.Policy{{ID: home.ID, Name: "home", Mode: "scale-set", Max: 4, Fleet: true}}}})
		assert.Contains(t, e.ok("status"), "fleet home: held by "+alpha.Name+"; ", "the daemon's figures, the store's shares")
		assert.Contains(t, e.ok("jobs"), "on zulu (fits 6.0GiB free of 3.0GiB expected)")
	})

	t.Run("Edit", func(t *testing.T) {
		out := e.ok("policy", "edit", "home", "--no-fleet")
		assert.Contains(t, out, "changed policy home: fleet yes → no")
		assert.Contains(t, out, "policy home is served by host "+alpha.Name+" only now")
		assert.Regexp(t, `home\s+repo:octo/app scale-set=home\s+scale-set\s+`+alpha.Name, e.ok("policy", "list"))
		assert.Contains(t, e.ok("policy", "edit", "home", "--fleet"), "changed policy home: fleet no → yes")

		require.NoError(t, db.RecordAttempt(t.Context(), storetest.NewAttempt().Policy(home.ID).Host(beta.ID).State(rm.StateBusy).Build()))
		stderr := e.fails(1, "policy", "edit", "home", "--no-fleet")
		assert.Contains(t, stderr, "policy home has 1 live runner(s): pause it (`runner-manager policy pause home`)")
		assert.Regexp(t, `home\s+repo:octo/app scale-set=home\s+scale-set\s+fleet`, e.ok("policy", "list"), "nothing was changed")
	})
}

// On PostgreSQL a fleet policy is taken, and the commands show it as the
// fleet's. It runs once the PostgreSQL store serves fleet scale sets.
func TestFleetPolicyPostgres(t *testing.T) {
	if _, ok := any((*postgres.Store)(nil)).(store.FleetSets); !ok {
		t.Skip("the PostgreSQL store does not serve fleet scale sets yet (store.FleetSets)")
	}
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	e := newEnv(t)
	t.Setenv("RUNNER_MANAGER_STORE_PASSWORD", srv.Password())
	t.Setenv("RUNNER_MANAGER_STORE", bare(t, u))

	out := e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "12", "--fleet")
	assert.Contains(t, out, "max 12, min idle 0, the fleet's (every host serves it)")
	assert.Regexp(t, `home\s+repo:octo/app scale-set=home\s+scale-set\s+fleet\s+12`, e.ok("policy", "list"))
	var pj map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "show", "home", "--json")), &pj))
	assert.Equal(t, true, pj["fleet"])
	assert.Contains(t, e.fails(app.ExitInvalid, "policy", "move", "home", "--host", "anywhere"), "there is nothing to move")
	assert.Contains(t, e.ok("status"), "fleet home: no host holds its session yet")
	assert.Contains(t, e.ok("policy", "edit", "home", "--no-fleet"), "fleet yes → no")
}
