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
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/github/githubtest"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
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
	w := &sharedWorld{t: t, clock: newClock(), st: storetest.MustOpen(t), launcher: newFakeLauncher(), logs: &syncBuffer{}}
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
		ScaleDownAfter: -1, ActiveRequeue: time.Second, RunnerListEvery: 4 * time.Second, StartTimeout: time.Hour,
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
		cfg.Target, cfg.Policies = ct, []rm.Policy{pol}
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

func (w *sharedWorld) demand(i, n int) {
	w.loops[i].ReportDemand(github.Demand{Wanted: n, At: w.clock.Now()})
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
	w.loops[0].ReportDemand(github.Demand{Wanted: 2, At: w.clock.Now(), Events: []github.JobEvent{started(a0.RunnerName, 7)}})
	w.pass(0) // refresh: a list sent at t4 shows every registration
	require.Equal(t, 2, w.lists())
	sentAt := w.clock.Now()

	// a0 runs its job to the end and exits: concluded, its registration
	// left to GitHub (which deletes an ephemeral runner's; the fake keeps it).
	w.clock.Advance(w.cfg.ActiveRequeue / 2)
	w.loops[0].ReportDemand(github.Demand{Wanted: 2, At: w.clock.Now(), Events: []github.JobEvent{completed(a0.RunnerName, 7)}})
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

// A loop that falls idle takes a list sent after its last conclusion
// before this pass (what those runners left shows on it, and may be
// reaped from it): another loop's list that recent serves, an older one
// does not.
func TestSharedRunnerListWhenIdle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		listAfter bool // the other list is sent after a's end
		want      int  // requests for the idle list
	}{{"SentAfterTheLastEnd", true, 0}, {"SentBefore", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSharedWorld(t, 1, nil)
			w.demand(0, 2)
			w.pass(0) // the first list (nothing live), the launches
			as := w.live(0)
			require.Len(t, as, 2)
			w.clock.Advance(w.cfg.RunnerListEvery)
			w.pass(0) // a refresh, with runners live
			require.Equal(t, 2, w.lists())

			end := func(a rm.Attempt, job int64, wanted int) {
				w.loops[0].ReportDemand(github.Demand{Wanted: wanted, At: w.clock.Now(),
					Events: []github.JobEvent{started(a.RunnerName, job), completed(a.RunnerName, job)}})
				w.launcher.proc(a.ID).exit(0)
				w.pass(0)
				require.Equal(t, rm.StateFinished, w.attempt(a.ID).State)
			}
			sendOther := func() {
				_, err := w.targets[0].Runners(context.Background(), "")
				require.NoError(t, err)
			}
			w.clock.Advance(w.cfg.ActiveRequeue / 4)
			if !tc.listAfter {
				sendOther()
				w.clock.Advance(w.cfg.ActiveRequeue / 4)
			}
			end(as[0], 1, 1) // concluded; one runner still live: no list
			w.clock.Advance(w.cfg.ActiveRequeue / 4)
			if tc.listAfter {
				sendOther()
				w.clock.Advance(w.cfg.ActiveRequeue / 4)
			}
			n := w.lists()
			end(as[1], 2, 0) // the loop falls idle
			assert.Equal(t, tc.want, w.lists()-n)
			assert.Empty(t, w.live(0))
		})
	}
}
