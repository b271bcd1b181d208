package github_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// sharedListEnv is a fake GitHub behind a proxy that tells when a runner
// list request arrives, and one Client on a settable clock, with two
// classic targets of one repository (two label sets) and one of another
// repository.
type sharedListEnv struct {
	fake       *fakegithub.Server
	c          *github.Client
	clk        *clock
	arrived    chan struct{} // a runner list request reached the proxy
	a, b       *github.ClassicTarget
	otherScope *github.ClassicTarget
}

func newSharedListEnv(t *testing.T) *sharedListEnv {
	t.Helper()
	const other = "octo-org/other"
	fake := githubtest.NewTestServer(t, fakegithub.WithToken(fakeToken), fakegithub.WithRepo(fakeRepo), fakegithub.WithRepo(other))
	e := &sharedListEnv{fake: fake, clk: newClock(), arrived: make(chan struct{}, 100)}
	up, err := url.Parse(fake.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(up)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/actions/runners") {
			select {
			case e.arrived <- struct{}{}:
			default:
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c, err := github.New(github.Config{WebURL: front.URL, APIURL: front.URL + "/api/v3/", Token: fakeToken, Now: e.clk.Now,
		Sleep: (&sleeps{}).Sleep, Logger: newTextLogger(&logBuffer{})})
	require.NoError(t, err)
	e.c = c
	mk := func(repo, label string) *github.ClassicTarget {
		scope, err := rm.Repository(repo)
		require.NoError(t, err)
		ct, err := github.NewClassicTarget(c, labelTarget(t, scope, "", label), github.ClassicOptions{NamePrefix: prefix, OS: "linux", Arch: "amd64"})
		require.NoError(t, err)
		return ct
	}
	e.a, e.b, e.otherScope = mk(fakeRepo, "a"), mk(fakeRepo, "b"), mk(other, "a")
	return e
}

func (e *sharedListEnv) lists() int { return e.fake.Calls(fakegithub.RouteRepoRunners) }

func names(rs []rm.Runner) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestRunnersSinceShared(t *testing.T) {
	e := newSharedListEnv(t)
	ctx := t.Context()
	one, err := e.a.JITConfig(ctx, prefix+"one")
	require.NoError(t, err)
	_, err = e.b.JITConfig(ctx, "someone-elses")
	require.NoError(t, err)

	t0 := e.clk.Now()
	rs, at, err := e.a.RunnersSince(ctx, prefix, t0)
	require.NoError(t, err)
	assert.Equal(t, t0, at, "the time the request was sent, on the client's clock")
	assert.Equal(t, []string{prefix + "one"}, names(rs))
	require.Equal(t, 1, e.lists())

	t.Run("OneRequestWithinTheWindow", func(t *testing.T) {
		for i := range 10 {
			e.clk.Add(100 * time.Millisecond)
			ct := e.a
			if i%2 == 1 {
				ct = e.b
			}
			rs, at, err := ct.RunnersSince(ctx, prefix, t0)
			require.NoError(t, err)
			assert.Equal(t, t0, at)
			assert.Equal(t, []string{prefix + "one"}, names(rs))
			all, _, err := ct.RunnersSince(ctx, "", t0)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{prefix + "one", "someone-elses"}, names(all), "the prefix filters the shared list")
		}
		assert.Equal(t, 1, e.lists(), "two targets of one scope, 20 calls: one request")
	})

	t.Run("NewerThanTheList", func(t *testing.T) {
		t1 := e.clk.Now()
		require.True(t, t1.After(t0))
		_, at, err := e.b.RunnersSince(ctx, prefix, t1)
		require.NoError(t, err)
		assert.Equal(t, t1, at)
		assert.Equal(t, 2, e.lists())
		// The new list serves the other target, and any older bound.
		_, at, err = e.a.RunnersSince(ctx, prefix, t0)
		require.NoError(t, err)
		assert.Equal(t, t1, at)
		assert.Equal(t, 2, e.lists())
	})

	t.Run("ScopesApart", func(t *testing.T) {
		rs, _, err := e.otherScope.RunnersSince(ctx, prefix, t0)
		require.NoError(t, err)
		assert.Empty(t, rs, "another repository's list")
		assert.Equal(t, 1, e.fake.Calls(fakegithub.RouteRepoRunners)-2)
	})

	t.Run("RunnersIsAlwaysFresh", func(t *testing.T) {
		n := e.lists()
		_, err := e.a.Runners(ctx, prefix)
		require.NoError(t, err)
		assert.Equal(t, n+1, e.lists())
	})

	t.Run("OwnWritesSeen", func(t *testing.T) {
		e.clk.Add(time.Second)
		jit, err := e.b.JITConfig(ctx, prefix+"two")
		require.NoError(t, err)
		n := e.lists()
		e.clk.Add(time.Second)
		rs, _, err := e.a.RunnersSince(ctx, prefix, e.clk.Now())
		require.NoError(t, err)
		assert.Equal(t, n+1, e.lists(), "a list taken after the registration")
		assert.ElementsMatch(t, []string{prefix + "one", prefix + "two"}, names(rs))

		// A removal by this client hides the registration from the lists
		// sent before it at once, without a request...
		require.NoError(t, e.a.RemoveRunner(ctx, jit.RunnerID))
		rs, _, err = e.b.RunnersSince(ctx, prefix, t0)
		require.NoError(t, err)
		assert.Equal(t, []string{prefix + "one"}, names(rs))
		assert.Equal(t, n+1, e.lists())
		// ...and a list taken after it does not show it either.
		e.clk.Add(time.Second)
		rs, _, err = e.b.RunnersSince(ctx, prefix, e.clk.Now())
		require.NoError(t, err)
		assert.Equal(t, []string{prefix + "one"}, names(rs))
		assert.Equal(t, n+2, e.lists())
		// A removal GitHub refused (busy) hides nothing.
		e.fake.Fault(fakegithub.RouteRepoDeleteRunner, fakegithub.Fault{Status: 422, Times: 1})
		require.ErrorIs(t, e.a.RemoveRunner(ctx, one.RunnerID), rm.ErrRunnerBusy)
		rs, _, err = e.b.RunnersSince(ctx, prefix, t0)
		require.NoError(t, err)
		assert.Equal(t, []string{prefix + "one"}, names(rs))
	})
}

// Callers that ask while a list request is under way wait for it rather
// than send their own.
func TestRunnersSinceConcurrent(t *testing.T) {
	e := newSharedListEnv(t)
	ctx := t.Context()
	_, err := e.a.JITConfig(ctx, prefix+"one")
	require.NoError(t, err)
	e.fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Latency: 300 * time.Millisecond, Times: 1})
	t0 := e.clk.Now()
	const callers = 8
	var wg sync.WaitGroup
	ats := make([]time.Time, callers)
	errs := make([]error, callers)
	got := make([][]rm.Runner, callers)
	for i := range callers {
		ct := e.a
		if i%2 == 1 {
			ct = e.b
		}
		wg.Go(func() { got[i], ats[i], errs[i] = ct.RunnersSince(ctx, prefix, t0) })
		if i == 0 {
			<-e.arrived // the first request is under way: the others find it
		}
	}
	wg.Wait()
	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, t0, ats[i])
		assert.Equal(t, []string{prefix + "one"}, names(got[i]))
	}
	assert.Equal(t, 1, e.lists(), "8 concurrent callers, one request")
}

// A caller whose context ends stops waiting; the others still get the
// list, and a failed request is not kept.
func TestRunnersSinceErrors(t *testing.T) {
	e := newSharedListEnv(t)
	ctx := t.Context()
	e.fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Status: 500, Times: 10})
	_, _, err := e.a.RunnersSince(ctx, prefix, e.clk.Now())
	require.Error(t, err)
	e.fake.ClearFaults()
	n := e.lists()
	_, _, err = e.b.RunnersSince(ctx, prefix, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, n+1, e.lists(), "a failure is not a list: the next call asks")
}

// A caller that gives up while its request is under way leaves the callers
// that joined it to ask again, not to fail with its cancellation.
func TestRunnersSinceSenderGivesUp(t *testing.T) {
	e := newSharedListEnv(t)
	a, b, fake, clk, arrived := e.a, e.b, e.fake, e.clk, e.arrived
	_, err := a.JITConfig(t.Context(), prefix+"one")
	require.NoError(t, err)

	fake.Fault(fakegithub.RouteRepoRunners, fakegithub.Fault{Latency: time.Second, Times: 1})
	t0 := clk.Now()
	sender, cancel := context.WithCancel(t.Context())
	senderErr := make(chan error, 1)
	go func() {
		_, _, err := a.RunnersSince(sender, prefix, t0)
		senderErr <- err
	}()
	<-arrived // a's request is under way: b joins it
	stop := time.AfterFunc(100*time.Millisecond, cancel)
	defer stop.Stop()
	rs, _, err := b.RunnersSince(t.Context(), prefix, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{prefix + "one"}, names(rs))
	require.ErrorIs(t, <-senderErr, context.Canceled)
	assert.Len(t, arrived, 1, "b asked again once a gave up")
}

// RunnerLists hands out the newest list of each scope listed, every
// registration in it (not only the prefix asked for), without a request,
// less what the client removed since.
func TestRunnerLists(t *testing.T) {
	e := newSharedListEnv(t)
	ctx := t.Context()
	assert.Empty(t, e.c.RunnerLists(), "nothing listed yet")
	one, err := e.a.JITConfig(ctx, prefix+"one")
	require.NoError(t, err)
	_, err = e.b.JITConfig(ctx, "someone-elses")
	require.NoError(t, err)

	t0 := e.clk.Now()
	_, _, err = e.a.RunnersSince(ctx, prefix, t0)
	require.NoError(t, err)
	require.Equal(t, 1, e.lists())
	lists := e.c.RunnerLists()
	require.Len(t, lists, 1, "only the scope listed")
	assert.Equal(t, "repo:"+fakeRepo, lists[0].Scope.String())
	assert.Equal(t, t0, lists[0].At)
	assert.ElementsMatch(t, []string{prefix + "one", "someone-elses"}, names(lists[0].Runners))
	assert.Equal(t, 1, e.lists(), "RunnerLists sends nothing")

	_, _, err = e.otherScope.RunnersSince(ctx, prefix, t0)
	require.NoError(t, err)
	lists = e.c.RunnerLists()
	require.Len(t, lists, 2)
	assert.Equal(t, "repo:"+fakeRepo, lists[0].Scope.String(), "sorted by scope")
	assert.Equal(t, "repo:octo-org/other", lists[1].Scope.String())

	e.clk.Add(time.Second)
	require.NoError(t, e.a.RemoveRunner(ctx, one.RunnerID))
	lists = e.c.RunnerLists()
	assert.Equal(t, []string{"someone-elses"}, names(lists[0].Runners), "what the client removed is left out")
}
