package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate"
)

// The side-by-side run serves the same jobs through both scalers and never
// lets either run more than max jobs at once.
func TestRunCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two scalers' runners")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := simulate.RunCompare(ctx, simulate.CompareOptions{Jobs: 8, Max: 2, Spare: 2,
		MinDuration: 200 * time.Millisecond, MaxDuration: 400 * time.Millisecond, RunnerBoot: 500 * time.Millisecond})
	require.NoError(t, err)
	for _, r := range []simulate.ScalerResult{rep.Manager, rep.Baseline} {
		assert.Equal(t, 8, r.Served, r.Scaler)
		assert.LessOrEqual(t, r.PeakJobs, 2, "%s: jobs in flight never pass max", r.Scaler)
		assert.Greater(t, r.Efficiency, 0.0, r.Scaler)
		assert.LessOrEqual(t, r.Efficiency, 1.0, r.Scaler)
		assert.NotZero(t, r.PeakRunnerRSSBytes, r.Scaler)
		assert.Positive(t, r.ListEfficiency, r.Scaler)
		assert.GreaterOrEqual(t, r.ReachableSeconds, r.ListSeconds, "%s: a boot only delays", r.Scaler)
		assert.Positive(t, r.ReachableEfficiency, r.Scaler)
	}
	assert.Zero(t, rep.Baseline.Ready, "the baseline keeps no runner while quiet")
	assert.GreaterOrEqual(t, rep.Manager.Ready, 1, "the manager's spare while quiet")
	assert.LessOrEqual(t, rep.Manager.PeakRunners, 2+2, "max runners and the spares")
	assert.Greater(t, rep.Manager.BootSeconds, 0.4, "the manager measured the boot")
	assert.InDelta(t, rep.Manager.MakespanSeconds/rep.Baseline.MakespanSeconds, rep.Ratios.Makespan, 1e-9)
}
