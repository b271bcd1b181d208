package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

const (
	sharedToken = "ghp_sharedListTokenNeverPrinted012345"
	sharedRepo  = "acme/shared"
)

// sharedWorld is several classic loops of one repository on one host, each
// with its own target on one GitHub client, over the fake GitHub (real
// HTTP) and a real journal; launches are fakes. The loops and the client
// share a manual clock, and the test runs the passes.
type sharedWorld struct {
	t        *testing.T
	fake     *fakegithub.Server
	clock    *clock
	st       store.Store
	host     rm.Host
	launcher *fakeLauncher
	logs     *syncBuffer
	loops    []*reconcile.Loop
	targets  []*github.ClassicTarget
	policies []rm.Policy
	cfg      reconcile.Config
}

func newSharedWorld(t *testing.T, n int, edit func(c *reconcile.Config)) *sharedWorld {
	t.Helper()
	w := &sharedWorld{t: t, clock: newClock(), st: sqlitetest.MustOpen(t), launcher: newFakeLauncher(), logs: &syncBuffer{}}
	w.fake = githubtest.NewTestServer(t, fakegithub.WithToken(sharedToken), fakegithub.WithRepo(sharedRepo))
	log := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	client, err := github.New(github.Config{WebURL: w.fake.URL(), APIURL: w.fake.APIURL(), Token: sharedToken, Now: w.clock.Now, Logger: log})
	require.NoError(t, err)
	ctx := context.Background()
	w.host = storetest.NewHost().Build()
	require.NoError(t, w.st.PutHost(ctx, w.host))
	prefix := rm.RunnerNamePrefix(w.host.ID)
	w.cfg = reconcile.Config{
		Store: w.st, Launcher: w.launcher, Meters: newFakeMeters(), Host: w.host, Now: w.clock.Now, Logger: log,
		LoopOptions: reconcile.LoopOptions{ScaleDownAfter: -1, ActiveRequeue: time.Second, RunnerListEvery: 4 * time.Second, StartTimeout: time.Hour},
	}
	if edit != nil {
		edit(&w.cfg)
	}
	for i := range n {
		pol := storetest.NewPolicy().Name(fmt.Sprintf("p%d", i)).Repository(sharedRepo).Labels(fmt.Sprintf("set-%d", i)).Max(2).
			Host(w.host.ID).Build()
		require.NoError(t, w.st.InsertPolicy(ctx, pol))
		ct, err := github.NewClassicTarget(client, pol.Target, github.ClassicOptions{NamePrefix: prefix, Logger: log})
		require.NoError(t, err)
		cfg := w.cfg
		cfg.Target, cfg.Policies = reconcile.TargetOf(ct), []rm.Policy{pol}
		loop, err := reconcile.NewLoop(cfg)
		require.NoError(t, err)
		t.Cleanup(loop.Close)
		w.loops = append(w.loops, loop)
		w.targets = append(w.targets, ct)
		w.policies = append(w.policies, pol)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs := strings.Split(w.logs.String(), "\n")
			t.Logf("log:\n%s", strings.Join(logs[max(len(logs)-100, 0):], "\n"))
		}
	})
	return w
}

func (w *sharedWorld) pass(i int) {
	w.t.Helper()
	_, err := w.loops[i].Reconcile(context.Background())
	require.NoError(w.t, err)
}

// pass0 runs loop 0's pass and returns its result.
func (w *sharedWorld) pass0() reconcile.Result {
	w.t.Helper()
	res, err := w.loops[0].Reconcile(context.Background())
	require.NoError(w.t, err)
	return res
}

func (w *sharedWorld) demand(i, n int) {
	w.loops[i].ReportDemand(rm.Demand{Wanted: n, At: w.clock.Now()})
}

func (w *sharedWorld) lists() int { return w.fake.Calls(fakegithub.RouteRepoRunners) }

// live counts policy i's live attempts.
func (w *sharedWorld) live(i int) []rm.Attempt {
	w.t.Helper()
	as, err := w.st.ActiveAttempts(context.Background(), w.policies[i].ID)
	require.NoError(w.t, err)
	return as
}

// Several classic loops of one repository with live runners list the
// repository's runners about once per RunnerListEvery between them, not
// once each; each one's list is never older than 1.5 RunnerListEvery.
func TestSharedRunnerListOnePerInterval(t *testing.T) {
	const loops = 6
	w := newSharedWorld(t, loops, nil)
	step := w.cfg.ActiveRequeue / loops // the loops' passes spread over each second
	for i := range loops {
		w.demand(i, 1)
		w.pass(i)
		w.clock.Advance(step)
	}
	assert.Equal(t, 1, w.lists(), "the first passes share one list")
	for i := range loops {
		require.Len(t, w.live(i), 1, "loop %d launched its runner", i)
	}

	const rounds = 40 // 40 s: 10 RunnerListEvery
	for range rounds {
		for i := range loops {
			w.pass(i)
			w.clock.Advance(step)
		}
	}
	lists := w.lists() - 1
	t.Logf("%d lists in %d rounds of %d loops", lists, rounds, loops)
	span := time.Duration(rounds) * w.cfg.ActiveRequeue
	intervals := int(span / w.cfg.RunnerListEvery)
	assert.LessOrEqual(t, lists, intervals+1, "about one list per interval for all %d loops, not %d", loops, loops*intervals)
	assert.GreaterOrEqual(t, lists, int(span/(w.cfg.RunnerListEvery*3/2)), "each loop's list at most 1.5 intervals old")
	assert.Zero(t, w.fake.Calls(fakegithub.RouteRepoRunner), "no runner looked up: every list showed them")
	for i := range loops {
		as := w.live(i)
		require.Len(t, as, 1)
		assert.Equal(t, rm.StateStarting, as[0].State, "the runner never came online")
	}
}

// A shared list sent before an attempt of another loop ended is no word on
// what its end left: the registration it shows is reaped only from a list
// sent after the end.
func TestSharedRunnerListReapsOnlyAfterTheEnd(t *testing.T) {
	w := newSharedWorld(t, 2, nil)
	w.demand(0, 2)
	w.demand(1, 1)
	w.pass(0) // the first list, sent at t0, then the launches
	w.pass(1) // the same list
	require.Equal(t, 1, w.lists())
	a0 := w.live(0)[0]

	w.clock.Advance(w.cfg.RunnerListEvery)
	w.loops[0].ReportDemand(rm.Demand{Wanted: 2, At: w.clock.Now(), Events: []rm.JobEvent{started(a0.RunnerName, 7)}})
	w.pass(0) // refresh: a list sent at t4 shows every registration
	require.Equal(t, 2, w.lists())
	sentAt := w.clock.Now()

	// a0 runs its job to the end and exits: concluded, its registration
	// left to GitHub (which deletes an ephemeral runner's; the fake keeps it).
	w.clock.Advance(w.cfg.ActiveRequeue / 2)
	w.loops[0].ReportDemand(rm.Demand{Wanted: 2, At: w.clock.Now(), Events: []rm.JobEvent{completed(a0.RunnerName, 7)}})
	w.launcher.proc(a0.ID).exit(0)
	w.pass(0)
	got := w.attempt(a0.ID)
	require.Equal(t, rm.StateFinished, got.State)
	require.True(t, got.EndedAt.After(sentAt))
	assert.True(t, w.registered(a0.RunnerName))

	// Loop 1's refresh takes the list sent at t4, before the end: a0's
	// registration is left alone.
	w.clock.Advance(w.cfg.ActiveRequeue / 4)
	w.pass(1)
	assert.Equal(t, 2, w.lists(), "loop 1 took loop 0's list")
	assert.Zero(t, w.fake.Calls(fakegithub.RouteRepoDeleteRunner), "no removal on a list older than the end")
	assert.True(t, w.registered(a0.RunnerName))

	// Its next refresh sends a list after the end, which still shows it:
	// a leftover, removed.
	w.clock.Advance(w.cfg.RunnerListEvery)
	w.pass(1)
	assert.Equal(t, 3, w.lists())
	assert.Equal(t, 1, w.fake.Calls(fakegithub.RouteRepoDeleteRunner))
	assert.False(t, w.registered(a0.RunnerName))
}

func (w *sharedWorld) attempt(id rm.AttemptID) rm.Attempt {
	w.t.Helper()
	a, err := w.st.Attempt(context.Background(), id)
	require.NoError(w.t, err)
	return a
}

// registered reports whether the fake GitHub holds a registration of name.
func (w *sharedWorld) registered(name string) bool {
	for _, r := range w.fake.Runners() {
		if r.Name == name {
			return true
		}
	}
	return false
}

// A loop that falls idle takes its list for reaping half an interval
// after its last conclusion, sent after it (what those runners left shows
// on it, and may be reaped from it): another loop's list that recent
// serves, an older one does not; a loop live again takes none.
func TestSharedRunnerListWhenIdle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		other  bool // another list is sent after the end
		before bool // another list is sent before the end
		live   bool // the loop is live again before the list is due
		want   int  // requests
	}{
		{name: "OtherListAfterTheEnd", other: true, want: 0},
		{name: "OtherListBeforeTheEnd", before: true, want: 1},
		{name: "NoOtherList", want: 1},
		{name: "LiveAgain", live: true, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSharedWorld(t, 1, nil)
			w.demand(0, 1)
			w.pass(0) // the first list (nothing live), the launch
			as := w.live(0)
			require.Len(t, as, 1)
			w.clock.Advance(w.cfg.RunnerListEvery)
			w.pass(0) // a refresh, with a runner live
			require.Equal(t, 2, w.lists())

			// The runner runs a job and exits: concluded, nothing live.
			w.clock.Advance(w.cfg.ActiveRequeue / 2)
			if tc.before {
				_, err := w.targets[0].Runners(context.Background(), "")
				require.NoError(t, err)
			}
			w.clock.Advance(w.cfg.ActiveRequeue / 2)
			a := as[0]
			w.loops[0].ReportDemand(rm.Demand{Wanted: 0, At: w.clock.Now(),
				Events: []rm.JobEvent{started(a.RunnerName, 1), completed(a.RunnerName, 1)}})
			w.launcher.proc(a.ID).exit(0)
			res := w.pass0()
			require.Equal(t, rm.StateFinished, w.attempt(a.ID).State)
			end := w.clock.Now()
			due := end.Add(w.cfg.RunnerListEvery / 2)
			lists := w.lists()
			assert.Equal(t, 2, lists-btoi(tc.before), "no list yet")
			assert.LessOrEqual(t, res.RequeueAfter, due.Sub(w.clock.Now()), "a pass when the list is due")

			if tc.live {
				w.demand(0, 1)
			}
			w.clock.Advance(w.cfg.ActiveRequeue)
			w.pass(0)
			assert.Equal(t, lists, w.lists(), "still none before it is due")
			if tc.other {
				_, err := w.targets[0].Runners(context.Background(), "")
				require.NoError(t, err)
			}
			n := w.lists()
			w.clock.Advance(due.Sub(w.clock.Now()))
			w.pass(0)
			assert.Equal(t, tc.want, w.lists()-n)
			if !tc.live {
				w.clock.Advance(w.cfg.ActiveRequeue)
				w.pass(0)
				assert.Equal(t, tc.want, w.lists()-n, "once")
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A runner found gone after a restart is judged by a list sent after its
// loss was seen: a shared list sent before, however recent, does not
// serve, and a registration removed meanwhile (by another client) makes it
// lost.
func TestSharedRunnerListAfterALoss(t *testing.T) {
	w := newSharedWorld(t, 1, nil)
	ctx := context.Background()
	name := rm.RunnerName(w.host.ID, rm.NewAttemptID())
	id, err := rm.ParseAttemptID(strings.TrimPrefix(name, rm.RunnerNamePrefix(w.host.ID)))
	require.NoError(t, err)
	jit, err := w.targets[0].JITConfig(ctx, name)
	require.NoError(t, err)
	a := storetest.NewAttempt().ID(id).RunnerName(name).Policy(w.policies[0].ID).Host(w.host.ID).State(rm.StateIdle).
		GitHubRunnerID(jit.RunnerID).ProcessID(4242).ProcessStart(1).CreatedAt(w.clock.Now().Add(-time.Hour)).Build()
	require.NoError(t, w.st.RecordAttempt(ctx, a))
	rs, err := w.targets[0].Runners(ctx, "")
	require.NoError(t, err)
	require.Len(t, rs, 1, "the shared list, sent now, shows its registration")

	// Another client removes it; this one's shared list does not know.
	other, err := github.New(github.Config{WebURL: w.fake.URL(), APIURL: w.fake.APIURL(), Token: sharedToken})
	require.NoError(t, err)
	ot, err := github.NewClassicTarget(other, w.policies[0].Target, github.ClassicOptions{})
	require.NoError(t, err)
	require.NoError(t, ot.RemoveRunner(ctx, jit.RunnerID))

	w.clock.Advance(w.cfg.ActiveRequeue / 4)
	n := w.lists()
	w.pass(0) // the runner is found gone: a list sent after that
	assert.Equal(t, n+1, w.lists(), "the list sent before the loss does not serve")
	w.clock.Advance(w.cfg.ActiveRequeue)
	w.demand(0, 0) // GitHub's word after the loss: no job
	w.pass(0)
	got := w.attempt(a.ID)
	assert.Equal(t, rm.Lost, got.Outcome.Reason, "%s", got.Outcome)
	assert.Equal(t, n+1, w.lists())
}
