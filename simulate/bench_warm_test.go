package simulate_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestRunWarm: the warm case runs each repository's CI jobs on both
// sides through the daemon and reports each run's setup; the side with
// Policy.Cold starts every run cold, whatever ran before it.
func TestRunWarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	rep, err := simulate.RunWarm(ctx, simulate.WarmOptions{Repos: 1, Runs: 2, Rate: -1, Changed: 2,
		CI: fakegithub.CIJob{Files: 8, FileBytes: 2 << 10, ToolBytes: 64 << 10, Packages: 4, PackageBytes: 4 << 10}})
	require.NoError(t, err)
	require.Len(t, rep.Sides, 2)
	for _, sd := range rep.Sides {
		require.Len(t, sd.Repos, 1, sd.Name)
		runs := sd.Repos[0].Runs
		require.Len(t, runs, 2, sd.Name)
		assert.Equal(t, "bench/app-1", sd.Repos[0].Repo)
		first := runs[0]
		assert.False(t, first.Checkout.Warm || first.Tool.Warm || first.Deps.Warm, "%s: a first run is cold: %+v", sd.Name, first)
		assert.Equal(t, 8, first.Checkout.Objects)
		assert.Equal(t, 8, first.Checkout.Total)
		assert.Positive(t, first.Fetched)
		assert.InDelta(t, 1.0, sd.Repos[0].Ratios[0], 1e-9)
		if sd.Cold {
			second := runs[1]
			assert.Equal(t, [3]int{8, 1, 4}, [3]int{second.Checkout.Objects, second.Tool.Objects, second.Deps.Objects}, "policy cold: every run fetches all: %+v", second)
			assert.Greater(t, second.Fetched, first.Fetched-int64(2*(2<<10))-1, "a cold run fetches all again")
		}
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	assert.Contains(t, out.String(), "cold (policy cold = true)")
	assert.Regexp(t, `bench/app-1 +run 2: setup .* checkout \d/8, toolchain \d/1, dependencies \d/4 files`, out.String())
}
