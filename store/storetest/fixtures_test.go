package storetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestPolicyBuilder(t *testing.T) {
	h := storetest.NewHost().Build()
	p := storetest.NewPolicy().Repository("acme/repo").Host(h.ID).Autoscale("home", 2).Active().Build()
	require.NoError(t, p.Validate())
	assert.True(t, p.IsOwnedBy(h.ID))
	assert.Equal(t, "repo:acme/repo group=Default scale-set=home", p.Target.String())
	assert.Equal(t, 2, p.Max)
	assert.True(t, p.Active())

	def := storetest.NewPolicy().Build()
	require.NoError(t, def.Validate(), "the defaults are valid")
	assert.NotEqual(t, def.Name, storetest.NewPolicy().Build().Name, "names are unique")

	classic := storetest.NewPolicy().Org("acme").Labels("x64", "linux", "linux").MinIdle(1).Max(3).Paused().MemoryEstimate(1 << 30).Build()
	require.NoError(t, classic.Validate())
	assert.Equal(t, []string{"linux", "x64"}, classic.Target.Labels)
	assert.True(t, classic.Paused)
	assert.Equal(t, uint64(1<<30), classic.MemoryEstimate)

	both := storetest.NewPolicy().Autoscale("home", 1).Labels("linux").Build()
	require.ErrorIs(t, both.Validate(), rm.ErrInvalid, "builders build what they are told")
}

func TestAttemptBuilder(t *testing.T) {
	pid := rm.NewPolicyID()
	for _, st := range rm.AttemptStates {
		t.Run(string(st), func(t *testing.T) {
			a := storetest.NewAttempt().Policy(pid).State(st).Build()
			require.NoError(t, a.Validate())
			assert.Equal(t, st, a.State)
			assert.False(t, a.CreatedAt.IsZero())
			// Each state on the way has a time, in order.
			last := a.CreatedAt
			for _, s := range rm.AttemptStates[1:] {
				at := a.StateAt(s)
				if at.IsZero() || (s.Ended() && s != st) {
					continue
				}
				assert.True(t, at.After(last), "%s at %v, not after %v", s, at, last)
				last = at
			}
			if st.Live() {
				assert.False(t, a.StateAt(st).IsZero())
			} else {
				assert.False(t, a.EndedAt.IsZero())
			}
			assert.Equal(t, last, a.UpdatedAt)
		})
	}
	done := storetest.NewAttempt().Policy(pid).State(rm.StateFinished).Build()
	assert.Equal(t, rm.CompletedJob, done.Outcome.Kind)
	failed := storetest.NewAttempt().Policy(pid).State(rm.StateFailed).Build()
	assert.Equal(t, rm.ProcessExitedUnexpectedly, failed.Outcome.Reason)
	idle := storetest.NewAttempt().Policy(pid).State(rm.StateFinished).Outcome(rm.Outcome{Kind: rm.ExitedIdleWithoutWork}).Build()
	assert.True(t, idle.BusyAt.IsZero(), "an idle exit was never busy")

	h := rm.NewHostID()
	id := rm.NewAttemptID()
	a := storetest.NewAttempt().ID(id).Host(h).Policy(pid).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(42).Build()
	assert.Equal(t, rm.RunnerName(h, id), a.RunnerName)
	assert.Equal(t, int64(1), a.GitHubRunnerID)
	assert.Equal(t, 42, a.PID)
}
