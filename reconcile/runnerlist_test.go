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
