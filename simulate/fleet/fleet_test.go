package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// liveStates are the states of an attempt not yet concluded.
var liveStates = []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy}

// checkServedOnce checks the end of a run: every job completed and ran
// once, on a runner of its own host's policy, and every attempt that ran a
// job concluded it once; no attempt is live, no runner registered or
// running.
func checkServedOnce(t *testing.T, f *fleet, st store.Store) {
	t.Helper()
	ctx := context.Background()
	owner := policyHosts(t, st)
	byLabel := map[string]string{}
	for _, h := range f.hosts {
		byLabel[h.label] = h.name
	}
	runnerHost := map[string]string{} // runner name → host of its attempt
	jobAttempts := map[string]int{}
	for _, p := range mapKeys(owner) {
		as, err := st.Attempts(ctx, store.AttemptFilter{Policy: p})
		require.NoError(t, err)
		for _, a := range as {
			assert.NotContains(t, liveStates, a.State, "attempt %s of %s is still live", a.ID, owner[p])
			runnerHost[a.RunnerName] = owner[p]
			if a.Outcome.Kind == rm.CompletedJob && a.Job.Known() {
				jobAttempts[a.Job.ID]++
			}
		}
	}
	runners := map[string]bool{}
	for _, j := range f.fake.Jobs() {
		if !assert.Equal(t, "completed", j.Status, "job %d", j.ID) {
			continue
		}
		assert.Equal(t, "succeeded", j.Result, "job %d", j.ID)
		assert.Equal(t, 1, j.Starts, "job %d ran exactly once", j.ID)
		assert.False(t, runners[j.RunnerName], "runner %s ran two jobs", j.RunnerName)
		runners[j.RunnerName] = true
		assert.Equal(t, byLabel[j.Labels[0]], runnerHost[j.RunnerName], "job %d of %s ran on runner %s, not of its host's policy", j.ID, j.Labels[0], j.RunnerName)
		assert.LessOrEqual(t, jobAttempts[j.ScaleSetJobID], 1, "job %d concluded by more than one attempt", j.ID) // scale-set policies: named by jobId
	}
	assert.Empty(t, f.fake.Runners(), "no registration is left")
	for _, h := range f.hosts {
		assert.Empty(t, h.runnerProcesses(), "no runner process of %s is left", h.name)
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFleetServesEachJobOnce: three hosts, three policies, one database,
// one fake GitHub: 300 jobs, each served once by its own host.
func TestFleetServesEachJobOnce(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
	}
	for _, h := range f.hosts {
		h.enqueue(100)
	}
	f.waitFor(4*time.Minute, "300 jobs completed", func() bool { n, _ := f.jobsDone(""); return n == 300 })

	view, err := f.hosts[0].fleetView()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, h := range view {
		names[h.Name] = true
		assert.False(t, h.Stale, "%s is seen stale while it runs", h.Name)
	}
	assert.Equal(t, map[string]bool{"alpha": true, "beta": true, "gamma": true}, names, "the fleet view lists every host")

	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	checkServedOnce(t, f, f.open())
}

// TestFleetKilledHost: kill -9 of one host mid-run: the others go on, the
// fleet view marks it stale, and when it returns it re-adopts and concludes
// its own attempts.
func TestFleetKilledHost(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), "alpha", "beta", "gamma")
	for _, h := range f.hosts {
		h.start()
		h.enqueue(40)
	}
	victim := f.hosts[1]
	f.waitFor(2*time.Minute, "beta busy with jobs", func() bool {
		_, done := f.jobsDone(victim.label)
		return done >= 8 && len(victim.runnerProcesses()) >= 2
	})
	victim.kill9()
	t.Logf("beta killed with %d runner processes alive", len(victim.runnerProcesses()))

	// The others finish their jobs while beta is away, and see it stale.
	f.waitFor(2*time.Minute, "alpha's and gamma's jobs completed", func() bool {
		_, a := f.jobsDone(f.hosts[0].label)
		_, g := f.jobsDone(f.hosts[2].label)
		return a == 40 && g == 40
	})
	f.waitFor(30*time.Second, "beta seen stale by alpha", func() bool {
		view, err := f.hosts[0].fleetView()
		if err != nil {
			t.Log(err)
			return false
		}
		for _, h := range view {
			if h.Name == victim.name {
				return h.Stale
			}
		}
		return false
	})
	require.True(t, f.hosts[0].alive() && f.hosts[2].alive(), "the other hosts run on")

	victim.start()
	f.waitFor(2*time.Minute, "every job completed", func() bool { n, _ := f.jobsDone(""); return n == 120 })
	f.waitFor(30*time.Second, "beta seen fresh again", func() bool {
		view, err := f.hosts[0].fleetView()
		if err != nil {
			return false
		}
		for _, h := range view {
			if h.Name == victim.name {
				return !h.Stale
			}
		}
		return false
	})
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	checkServedOnce(t, f, f.open())
}

// TestFleetDatabaseRestart: PostgreSQL restarted mid-run: the hosts keep
// their runners, retry, and recover without a restart; nothing is lost
// from the journal.
func TestFleetDatabaseRestart(t *testing.T) {
	srv := pgtest.New(t)
	f := newFleet(t, srv.URL(srv.CreateDatabase(t)), "alpha", "beta")
	for _, h := range f.hosts {
		h.start()
		h.enqueue(40)
	}
	f.waitFor(2*time.Minute, "jobs under way", func() bool { n, _ := f.jobsDone(""); return n >= 16 })
	require.NoError(t, srv.Stop())
	downFor := 4 * time.Second
	time.Sleep(downFor) // the outage itself, not a wait for a result
	require.NoError(t, srv.Start())
	for _, h := range f.hosts {
		require.True(t, h.alive(), "%s survived the database's restart", h.name)
	}
	f.waitFor(3*time.Minute, "every job completed", func() bool { n, _ := f.jobsDone(""); return n == 80 })
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	st := f.open()
	checkServedOnce(t, f, st)
	// Nothing lost: every job has its attempt in the journal.
	completed := 0
	for _, p := range mapKeys(policyHosts(t, st)) {
		as, err := st.Attempts(context.Background(), store.AttemptFilter{Policy: p})
		require.NoError(t, err)
		for _, a := range as {
			if a.Outcome.Kind == rm.CompletedJob {
				completed++
			}
		}
	}
	assert.Equal(t, 80, completed, "each job's attempt concluded CompletedJob in the journal")
}
