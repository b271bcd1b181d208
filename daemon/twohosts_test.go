package daemon_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// deletions records the runner registrations one daemon removes.
type deletions struct {
	mu  sync.Mutex
	ids []int64
}

var deleteRunner = regexp.MustCompile(`/actions/runners/(\d+)$`)

func (d *deletions) RoundTrip(r *http.Request) (*http.Response, error) {
	if m := deleteRunner.FindStringSubmatch(r.URL.Path); r.Method == http.MethodDelete && m != nil {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		d.mu.Lock()
		d.ids = append(d.ids, id)
		d.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (d *deletions) list() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int64(nil), d.ids...)
}

// Two hosts on one PostgreSQL store and one GitHub, each owning one
// classic policy of the same repository, serving at once: each job is
// served once by the host of its policy; neither removes a registration
// of the other's (each lists the repository's runners every 200 ms, and
// the other keeps an idle runner registered throughout), nor concludes
// the other's attempts; a leftover registration with one host's prefix
// is reaped by that host alone; and a policy moved from one to the other
// is served by its new host.
func TestTwoHostsShareAStore(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	w := newWorld(t)
	type host struct {
		d   *daemon.Daemon
		del *deletions
		pol rm.Policy
	}
	var hosts []*host
	for _, name := range []string{"alpha", "beta"} {
		del := &deletions{}
		gc := w.github()
		gc.Transport = del
		d, err := daemon.New(daemon.Config{DataDir: t.TempDir(), GitHub: gc, StoreConfig: daemon.StoreConfig{URL: u},
			ClassicPoll: 200 * time.Millisecond, HeartbeatEvery: 200 * time.Millisecond, SampleEvery: 100 * time.Millisecond,
			RefreshEvery: 200 * time.Millisecond, Loop: reconcile.LoopOptions{RunnerListEvery: 200 * time.Millisecond, OrphanListEvery: 200 * time.Millisecond},
			Logger: testLogger(t)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		h := &host{d: d, del: del, pol: w.addPolicy(t, d, name, true)}
		hosts = append(hosts, h)
	}
	a, b := hosts[0], hosts[1]
	require.NotEqual(t, a.d.Host().ID, b.d.Host().ID)
	for _, h := range hosts {
		h.pol.MinIdle = 1 // an idle runner registered the whole time, for the other's sweeps to leave alone
		require.NoError(t, h.d.Store().UpdatePolicy(t.Context(), h.pol))
	}

	// A leftover registration with beta's prefix and no attempt.
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	lt, err := rm.NewLabelTarget(scope, "", []string{"leftover"})
	require.NoError(t, err)
	c, err := github.New(w.github())
	require.NoError(t, err)
	ct, err := github.NewClassicTarget(c, lt, github.ClassicOptions{})
	require.NoError(t, err)
	leftover, err := ct.JITConfig(t.Context(), rm.RunnerName(b.d.Host().ID, rm.NewAttemptID()))
	require.NoError(t, err)

	stopA, stopB := start(t, a.d), start(t, b.d)
	const n = 6
	for i := range n {
		for _, label := range []string{"alpha", "beta"} {
			w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", label}, Name: label + "-" + strconv.Itoa(i),
				Duration: 300 * time.Millisecond, MemoryBytes: 8 << 20})
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	for _, h := range hosts {
		require.Eventually(t, func() bool { return ended(t, h.d.Store(), h.pol) == n }, 30*time.Second, 20*time.Millisecond)
	}
	require.Eventually(t, func() bool {
		for _, r := range w.gh.Runners() {
			if r.ID == leftover.RunnerID {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the leftover registration is reaped")

	// The policy of alpha moves to beta: refused while its idle runner
	// lives; paused, it has none, moves, and is resumed there.
	st := a.d.Store()
	require.Eventually(t, func() bool {
		as, err := st.ActiveAttempts(t.Context(), a.pol.ID)
		return err == nil && len(as) == 1
	}, 30*time.Second, 20*time.Millisecond, "alpha's min idle runner is up (between a job's end and its replacement it may not be)")
	var live *store.LiveAttemptsError
	require.ErrorAs(t, st.MovePolicy(t.Context(), a.pol.ID, b.d.Host().ID), &live)
	assert.Equal(t, 1, live.Live)
	p, err := st.Policy(t.Context(), a.pol.ID)
	require.NoError(t, err)
	p.Paused = true
	require.NoError(t, st.UpdatePolicy(t.Context(), p))
	require.Eventually(t, func() bool {
		as, err := st.ActiveAttempts(t.Context(), a.pol.ID)
		return err == nil && len(as) == 0
	}, 30*time.Second, 20*time.Millisecond, "the paused policy's idle runner goes")
	require.NoError(t, st.MovePolicy(t.Context(), a.pol.ID, b.d.Host().ID))
	p, err = st.Policy(t.Context(), a.pol.ID)
	require.NoError(t, err)
	p.Paused = false
	require.NoError(t, st.UpdatePolicy(t.Context(), p))
	require.Eventually(t, func() bool {
		for _, ps := range a.d.Status().Policies {
			if ps.ID == a.pol.ID {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "alpha's daemon drops the moved policy")
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "alpha"}, Name: "alpha-moved",
		Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	require.Eventually(t, func() bool { return ended(t, b.d.Store(), a.pol) == n+1 }, 30*time.Second, 20*time.Millisecond)

	require.NoError(t, stopA())
	require.NoError(t, stopB())

	// Whose each runner was, by the journal.
	owner := map[int64]rm.HostID{}
	prefixOf := map[rm.HostID]string{}
	for _, h := range hosts {
		prefixOf[h.d.Host().ID] = rm.RunnerNamePrefix(h.d.Host().ID)
	}
	byName := map[string]rm.Attempt{}
	for _, pol := range []rm.Policy{a.pol, b.pol} {
		as, err := a.d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: pol.ID})
		require.NoError(t, err)
		for _, at := range as {
			assert.False(t, at.Live(), "attempt %s is concluded", at.ID)
			byName[at.RunnerName] = at
			for id, prefix := range prefixOf {
				if strings.HasPrefix(at.RunnerName, prefix) {
					owner[at.GitHubRunnerID] = id
				}
			}
			if at.Outcome.Kind == rm.CompletedJob {
				assert.NotNil(t, at.ExitCode, "attempt %s was concluded by the host that started it (it knows the exit code)", at.ID)
			}
		}
	}
	owner[leftover.RunnerID] = b.d.Host().ID
	for _, h := range hosts {
		dels := h.del.list()
		assert.NotEmpty(t, dels, "host %s removed registrations", h.d.Host().Name)
		for _, id := range dels {
			assert.Equal(t, h.d.Host().ID, owner[id], "host %s removed runner %d, not its own", h.pol.Name, id)
		}
	}
	assert.Contains(t, b.del.list(), leftover.RunnerID, "beta reaped its leftover registration")

	for _, j := range w.gh.Jobs() {
		assert.Equal(t, 1, j.Starts, "job %s served once", j.Name)
		label := strings.SplitN(j.Name, "-", 2)[0]
		want := a.d.Host().ID
		if label == "beta" || j.Name == "alpha-moved" {
			want = b.d.Host().ID
		}
		assert.True(t, strings.HasPrefix(j.RunnerName, prefixOf[want]), "job %s ran on runner %s of its policy's host", j.Name, j.RunnerName)
		at, ok := byName[j.RunnerName]
		if assert.True(t, ok, "the journal has job %s's attempt", j.Name) {
			assert.Equal(t, rm.CompletedJob, at.Outcome.Kind, "job %s", j.Name)
		}
	}
}

// Two hosts with a policy each on one scale set: one store refuses that
// (storetest's PolicyTargetTaken), so here each host keeps its own store,
// as two hosts set up apart would. The first host's message session is the
// scale set's only one; the second is refused by GitHub and never deletes
// it, and every job is served once, by the first host's runners.
func TestTwoHostsOneScaleSet(t *testing.T) {
	srv := pgtest.New(t)
	w := newWorld(t)
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", "shared")
	require.NoError(t, err)
	var ds []*daemon.Daemon
	for _, name := range []string{"first", "second"} {
		u := srv.URL(srv.CreateDatabase(t))
		d, err := daemon.New(daemon.Config{DataDir: t.TempDir(), GitHub: w.github(), StoreConfig: daemon.StoreConfig{URL: u},
			RefreshEvery: 200 * time.Millisecond, SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		require.NoError(t, d.Store().InsertPolicy(t.Context(), rm.Policy{ID: rm.NewPolicyID(), Name: name, Host: d.Host().ID,
			Target: target, Max: 2, RunnerDir: w.runnerDir, MemoryEstimate: 64 << 20}))
		ds = append(ds, d)
	}
	first, second := ds[0], ds[1]
	start(t, first)
	owner := daemon.SessionOwner(first.Host())
	require.Eventually(t, func() bool {
		ss := w.gh.Sessions()
		return len(ss) == 1 && ss[0].Owner == owner
	}, 20*time.Second, 10*time.Millisecond, "the first host opens the session")
	session := w.gh.Sessions()[0]
	start(t, second)
	require.Eventually(t, func() bool {
		for _, c := range w.gh.CallLog() {
			if c.Status == http.StatusConflict {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "the second host is refused a session")

	w.serve(t, 4, "shared", false)
	ss := w.gh.Sessions()
	require.Len(t, ss, 1)
	assert.Equal(t, session.SessionID, ss[0].SessionID, "the first host's session was never deleted")
	rec, found, err := first.Store().SessionOf(t.Context(), session.ScaleSetID)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, first.Host().ID.String(), rec.HostID, "the first host's store records its session")
	_, found, err = second.Store().SessionOf(t.Context(), session.ScaleSetID)
	require.NoError(t, err)
	assert.False(t, found, "the second host recorded no session of its own")
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, 1, j.Starts)
		assert.True(t, strings.HasPrefix(j.RunnerName, rm.RunnerNamePrefix(first.Host().ID)), "job %s ran on the session's host", j.Name)
	}
}
