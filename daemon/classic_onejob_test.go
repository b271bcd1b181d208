package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// TestClassicOneJobOneRunner: in classic mode one queued job gets one
// runner, from one policy, however long the runner takes to boot and
// however many of the host's policies its labels match.
func TestClassicOneJobOneRunner(t *testing.T) {
	for _, other := range [][]string{{"linux", "gpu"}, {"linux"}} {
		t.Run(strings.Join(other, ","), func(t *testing.T) {
			w := newWorld(t, fakegithub.WithRunnerBootDelay(1500*time.Millisecond))
			d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ClassicPoll: 200 * time.Millisecond,
				SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			linux := w.addPolicy(t, d, "linux", true)
			scope, err := rm.Repository(repo)
			require.NoError(t, err)
			target, err := rm.NewLabelTarget(scope, "", other)
			require.NoError(t, err)
			second := rm.Policy{ID: rm.NewPolicyID(), Name: "second", Host: d.Host().ID, Target: target, Max: 2,
				RunnerDir: w.runnerDir, MemoryEstimate: 64 << 20}
			require.NoError(t, d.Store().InsertPolicy(t.Context(), second))

			stop := start(t, d)
			w.serve(t, 1, "linux", true)
			// The job is done at GitHub: its runner's attempt concludes when
			// the runner exits (a stop before that would stop it mid-job).
			require.Eventually(t, func() bool { return ended(t, d.Store(), linux)+ended(t, d.Store(), second) == 1 },
				30*time.Second, 20*time.Millisecond)
			require.NoError(t, stop())
			var all []rm.Attempt
			for _, p := range []rm.Policy{linux, second} {
				as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
				require.NoError(t, err)
				for _, a := range as {
					t.Logf("%s: %s %s", p.Name, a.ID, a.Outcome)
				}
				all = append(all, as...)
			}
			require.Len(t, all, 1, "one job, one runner")
			assert.Equal(t, rm.CompletedJob, all[0].Outcome.Kind)
		})
	}
}
