package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/simulate"
)

// caseRuns stands in for the side-by-side run of each case: each takes d
// (in the bubble's time) unless its context ends first, and the options
// it was given are kept.
func caseRuns(d time.Duration, got *[]simulate.CompareOptions) func() {
	return app.SetCompareCase(func(ctx context.Context, o simulate.CompareOptions) (simulate.CompareReport, error) {
		*got = append(*got, o)
		select {
		case <-time.After(d):
			return simulate.CompareReport{Jobs: o.Jobs, Max: o.Max}, nil
		case <-ctx.Done():
			return simulate.CompareReport{}, ctx.Err()
		}
	})
}

// --repeat runs every case again: --timeout bounds each case's run, not
// the whole, so three runs of cases near 2½ minutes each all finish with
// the default 10 minutes. (Under one bound for the whole, the second run's
// first case ended 40 s in with "context deadline exceeded", which read as
// the scaler stalling.)
func TestBenchCompareRepeatOutlastsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []simulate.CompareOptions
		defer caseRuns(140*time.Second, &got)()
		e := newEnv(t)
		out := filepath.Join(t.TempDir(), "compare.json")
		stdout := e.ok("bench", "--compare", "--repeat", "3", "--day", "0", "--out", out)
		assert.Contains(t, stdout, "bench --compare: run 3 of 3")
		assert.Contains(t, stdout, "over 3 runs")
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		var runs []struct {
			Name string `json:"name"`
			Run  int    `json:"run"`
		}
		require.NoError(t, json.Unmarshal(raw, &runs))
		assert.Len(t, runs, 3*4, "backlog, warm start, below capacity and classic, three times")
		assert.Len(t, got, 3*4)
		for _, o := range got {
			assert.Equal(t, 10*time.Minute, o.Timeout, "each case's run is bounded by --timeout")
		}
	})
}

// Each case's run gets --timeout; the day's at least --day + 2 minutes, as
// its arrivals alone take --day.
func TestBenchCompareTimeoutOfEachCase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []simulate.CompareOptions
		defer caseRuns(time.Second, &got)()
		e := newEnv(t)
		e.ok("bench", "--compare", "--timeout", "4m", "--day", "5m", "--out", filepath.Join(t.TempDir(), "compare.json"))
		var timeouts []time.Duration
		for _, o := range got {
			timeouts = append(timeouts, o.Timeout)
		}
		m := time.Minute
		assert.Equal(t, []time.Duration{4 * m, 4 * m, 4 * m, 7 * m, 4 * m}, timeouts, "backlog, warm start, below capacity, the day, classic")
	})
}
