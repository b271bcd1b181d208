package simulate_test

import (
	"context"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate"
)

// TestMain lets this test binary be the fake runner: the simulation
// hard-links it as Runner.Listener.
func TestMain(m *testing.M) {
	if code, ok := simulate.RunFakeRunnerIfNamed(os.Args); ok {
		os.Exit(code)
	}
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run()))
}

func TestRun(t *testing.T) {
	for _, classic := range []bool{false, true} {
		name := "scale-set"
		if classic {
			name = "classic"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dir := t.TempDir()
			var ticks int
			sum, err := simulate.Run(ctx, simulate.Options{
				Jobs: 6, Policies: 2, Max: 2, Classic: classic, DataDir: dir,
				MinDuration: 100 * time.Millisecond, MaxDuration: 400 * time.Millisecond,
				MinMemory: 8 << 20, MaxMemory: 24 << 20,
			}, func(simulate.Progress) { ticks++ })
			require.NoError(t, err)
			assert.Equal(t, 6, sum.Jobs)
			assert.Equal(t, 6, sum.Served)
			assert.Equal(t, 6, sum.DistinctRunners, "one ephemeral runner per job")
			assert.Zero(t, sum.RanTwice)
			assert.Equal(t, 6, sum.Outcomes["completed_job"], "%v", sum.Outcomes)
			assert.Zero(t, sum.Outcomes["live"], "every attempt concluded")
			assert.LessOrEqual(t, sum.PeakConcurrency, 4, "two policies of max 2")
			assert.LessOrEqual(t, sum.PeakLiveRunners, 4)
			assert.GreaterOrEqual(t, sum.PeakConcurrency, 1)
			assert.Positive(t, sum.WaitP50)
			assert.GreaterOrEqual(t, sum.WaitP95, sum.WaitP50)
			assert.Positive(t, sum.RESTCalls+sum.ScaleSetCalls)
			assert.Positive(t, ticks)
			t.Logf("%s: %d jobs in %s, wait p50 %s p95 %s, peak %d, calls/job %.1f (REST %d, scale set %d), refusals %v",
				name, sum.Served, sum.Elapsed.Round(time.Millisecond), sum.WaitP50.Round(time.Millisecond),
				sum.WaitP95.Round(time.Millisecond), sum.PeakConcurrency, sum.CallsPerJob(), sum.RESTCalls, sum.ScaleSetCalls, sum.Refusals)
		})
	}
}
