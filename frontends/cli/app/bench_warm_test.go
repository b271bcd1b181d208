package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/simulate"
)

// bench --case warm passes its figures to the case, prints the report
// side by side and writes it as JSON.
func TestBenchWarmCase(t *testing.T) {
	var got simulate.WarmOptions
	defer app.SetWarmCase(func(_ context.Context, o simulate.WarmOptions) (simulate.WarmReport, error) {
		got = o
		return simulate.WarmReport{Repos: 1, Runs: 2, Goal: simulate.WarmGoal, RateBytesPerSecond: o.Rate, Sides: []simulate.WarmSide{
			{Name: "warm (the default)", Worst: 0.05, Repos: []simulate.WarmRepo{{Repo: "bench/app-1", Ratios: []float64{1, 0.05},
				Runs: []simulate.WarmRun{{SetupMS: 4000, Fetched: 40e6, Checkout: simulate.WarmPhase{Objects: 100, Total: 100}},
					{SetupMS: 200, Fetched: 5e5, Checkout: simulate.WarmPhase{Objects: 5, Total: 100}, Tool: simulate.WarmPhase{Total: 1, Warm: true}}}}}},
		}}, nil
	})()
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "warm.json")
	stdout := e.ok("bench", "--case", "warm", "--warm-repos", "1", "--warm-runs", "2", "--warm-rate", "5MB", "--out", out)
	assert.Equal(t, simulate.WarmOptions{Repos: 1, Runs: 2, Rate: 5e6, Timeout: got.Timeout}, got)
	assert.Contains(t, stdout, "bench --case warm: 1 repositories × 2 runs, warm and cold side by side, downloads at 5.0 MB/s")
	assert.Regexp(t, `bench/app-1 +run 2: setup +200\.0ms \(  5\.0 %\)  fetched +500\.0 kB: checkout 5/100, toolchain 0/1`, stdout)
	assert.Contains(t, stdout, "worst later run: 5.0 % of its first (meets the goal)")
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep simulate.WarmReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	assert.Equal(t, 2, rep.Runs)
}

func TestBenchWarmRefusesBadFigures(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--case", "warm", "--warm-runs", "1"), "--warm-runs at least 2")
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--case", "warm", "--warm-rate", "0B"), "--warm-rate must be above 0")
	assert.Contains(t, e.fails(2, "bench", "--case", "cold"), `--case must be one of "day","warm"`)
}
