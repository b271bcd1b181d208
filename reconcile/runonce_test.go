package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestRunOnceConcludesWhatACrashLeft: after a crash, one `run --once` pass
// concludes a starting attempt whose runner is gone, by the evidence one
// pass has (GitHub's runner list; no demand is watched, so no word of a job
// can come), removes what it left (registration, root), and its policy can
// be removed at once. Before, each one-shot pass saw the loss anew and
// waited for a word that only a running daemon gets.
func TestRunOnceConcludesWhatACrashLeft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed bool
		reason rm.FailureReason
	}{
		{name: "Listed", listed: true, reason: rm.ProcessExitedUnexpectedly},
		{name: "Unlisted", listed: false, reason: rm.Lost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t)
			ft := newFakeTarget()
			cfg := f.config()
			cfg.Targets = func(context.Context, rm.Policy) (reconcile.Target, error) { return reconcile.TargetOf(ft), nil }
			pol := f.policy(storetest.NewPolicy().Name("o1").Autoscale("o1", 1))
			a := storetest.NewAttempt().Policy(pol.ID).Host(f.host.ID).State(rm.StateStarting).
				GitHubRunnerID(555).ProcessID(4242).ProcessStart(99).Build() // not alive
			require.NoError(t, f.st.RecordAttempt(t.Context(), a))
			if tc.listed {
				ft.add(rm.Runner{ID: 555, Name: a.RunnerName})
			}

			sup, err := reconcile.NewSupervisor(cfg)
			require.NoError(t, err)
			require.NoError(t, sup.RunOnce(t.Context()))

			got, err := f.st.Attempt(t.Context(), a.ID)
			require.NoError(t, err)
			require.False(t, got.Live(), "one pass concludes it: %s (%s)", got.State, got.LastMessage)
			assert.Equal(t, tc.reason, got.Outcome.Reason, "%s", got.Outcome)
			assert.Contains(t, got.Outcome.Detail, "while the manager was down")
			assert.False(t, ft.has(a.RunnerName), "its registration is removed")
			_, cleaned := f.launcher.cleanup(a.ID)
			assert.True(t, cleaned, "its root is cleaned")
			assert.Empty(t, f.live(pol), "nothing launched: no min idle, demand unknown")

			pol.Paused = true
			require.NoError(t, f.st.UpdatePolicy(t.Context(), pol))
			assert.NoError(t, f.st.DeletePolicy(t.Context(), pol.ID), "its policy can be removed right after")
		})
	}
}
