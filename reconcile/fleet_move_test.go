package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// A live attempt of this host's policy whose runner name is another
// host's (written by its old owner just as the policy moved here) is
// never concluded, repaired, reaped or deregistered by this host.
func TestLeavesAnotherHostsAttempt(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), nil)
	other := storetest.NewHost().Build()
	require.NoError(t, e.st.PutHost(e.ctx, other))
	old := e.clock.Now().Add(-time.Hour)
	theirs := []rm.Attempt{
		e.record(storetest.NewAttempt().Policy(e.policy.ID).Host(other.ID).CreatedAt(old).Build()),
		e.record(storetest.NewAttempt().Policy(e.policy.ID).Host(other.ID).State(rm.StateRegistering).GitHubRunnerID(901).CreatedAt(old).Build()),
		e.record(storetest.NewAttempt().Policy(e.policy.ID).Host(other.ID).State(rm.StateIdle).GitHubRunnerID(902).
			ProcessID(4321).ProcessStart(1).CreatedAt(old).Build()),
	}
	e.target.add(rm.Runner{ID: 901, Name: theirs[1].RunnerName})
	e.target.add(rm.Runner{ID: 902, Name: theirs[2].RunnerName, Online: true})
	mine := e.record(storetest.NewAttempt().Policy(e.policy.ID).Host(e.host.ID).CreatedAt(old).Build())

	e.pass()
	e.clock.Advance(10 * time.Minute)
	e.pass()
	for _, a := range theirs {
		got := e.attempt(a.ID)
		assert.True(t, got.Live(), "another host's attempt %s is left live", a.ID)
		assert.Equal(t, a.State, got.State)
	}
	assert.True(t, e.target.has(theirs[1].RunnerName), "its registration is left")
	assert.True(t, e.target.has(theirs[2].RunnerName))
	assert.Equal(t, rm.RegistrationFailed, e.attempt(mine.ID).Outcome.Reason, "this host's own crash leftover is repaired")
	assert.Contains(t, e.logs.String(), "launched by another host")
}

// movingStore moves policy to host to just before the first pending row
// of it is written: the move wins the race with the old owner's launch.
type movingStore struct {
	store.Store
	policy rm.PolicyID
	to     rm.HostID
	moved  bool
}

func (m *movingStore) RecordAttempt(ctx context.Context, a rm.Attempt) error {
	if !m.moved && a.Policy == m.policy && a.State == rm.StatePending {
		m.moved = true
		if err := m.Store.MovePolicy(ctx, m.policy, m.to); err != nil {
			return err
		}
	}
	return m.Store.RecordAttempt(ctx, a)
}

// A policy moved away between the pass's read of it and the launch of an
// admitted runner: the launch stops before anything is asked of GitHub,
// and the host ends its own row.
func TestLaunchStopsForAMovedPolicy(t *testing.T) {
	other := storetest.NewHost().Build()
	var ms *movingStore
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2).MinIdle(1), func(c *reconcile.Config) {
		require.NoError(t, c.Store.PutHost(context.Background(), other))
		ms = &movingStore{Store: c.Store, policy: c.Policies[0].ID, to: other.ID}
		c.Store = ms
	})
	e.pass()
	require.True(t, ms.moved, "a launch was admitted")
	assert.Zero(t, e.target.count("jit"), "no registration was asked for")
	assert.Zero(t, e.launcher.launches())
	as := e.ended()
	require.Len(t, as, 1)
	assert.Equal(t, rm.RegistrationFailed, as[0].Outcome.Reason)
	assert.Contains(t, as[0].Outcome.Detail, "moved to host")
	assert.Empty(t, e.live())
}
