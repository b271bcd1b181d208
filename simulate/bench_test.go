package simulate_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestRunBench(t *testing.T) {
	for _, tc := range []struct {
		name              string
		classic, webhooks bool
	}{{"scale-set", false, false}, {"classic", true, false}, {"classic-webhooks", true, true}} {
		name, classic := tc.name, tc.classic
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var ticks int
			rep, err := simulate.RunBench(ctx, simulate.BenchOptions{
				Jobs: 24, Policies: 3, Span: 2 * time.Second, Cycles: 2, Classic: classic, Webhooks: tc.webhooks, DataDir: t.TempDir(),
			}, func(simulate.Progress) { ticks++ })
			require.NoError(t, err)
			if classic {
				assert.Equal(t, "classic", rep.Mode)
			} else {
				assert.Equal(t, name, rep.Mode)
			}
			assert.Equal(t, tc.webhooks, rep.Webhooks)
			if tc.webhooks {
				// A job's run is read once, for its labels while queued;
				// its start and end come by webhook (two reads without).
				reads := rep.Calls.ByRoute[fakegithub.RouteRunJobs]
				assert.Less(t, float64(reads), 1.5*24, "reads of the runs' jobs: %v", rep.Calls.ByRoute)
			}
			assert.Equal(t, 24, rep.Queued)
			assert.Equal(t, 24, rep.Served, "every job served")
			assert.Equal(t, 24, rep.DistinctRunners, "one ephemeral runner per job")
			assert.Zero(t, rep.RanTwice)
			assert.Equal(t, 24, rep.Attempts["completed_job"], "%v", rep.Attempts)
			assert.Equal(t, 24, rep.Wait.Count)
			assert.Positive(t, rep.Wait.P50)
			assert.GreaterOrEqual(t, rep.Wait.P99, rep.Wait.P95)
			assert.GreaterOrEqual(t, rep.Wait.P95, rep.Wait.P50)
			assert.Equal(t, 24, rep.Launch.Count, "one launch per job")
			require.Len(t, rep.PerPolicy, 3)
			jobs := 0
			for _, p := range rep.PerPolicy {
				jobs += p.Jobs
				assert.LessOrEqual(t, p.PeakRunners, p.Max, p.Name)
				assert.LessOrEqual(t, p.PeakJobs, p.PeakRunners, p.Name)
			}
			assert.Equal(t, 24, jobs)
			assert.LessOrEqual(t, rep.Admission.PeakCommittedBytes, rep.Admission.HostMemoryBytes-rep.Admission.ReserveBytes)
			assert.Positive(t, rep.Admission.Samples)
			assert.Positive(t, rep.Daemon.CPUSeconds)
			assert.Positive(t, rep.Daemon.PeakRSSBytes)
			// The CPU split: the manager's goroutines are told from the
			// fake GitHub's, and the parts add up to the process's CPU.
			parts := rep.Daemon.CPUSecondsByPart
			require.Empty(t, rep.Daemon.CPUProfileError)
			assert.Positive(t, parts["manager"], "%v", parts)
			sum := 0.0
			for _, v := range parts {
				sum += v
			}
			assert.GreaterOrEqual(t, sum, rep.Daemon.CPUSeconds-1e-9, "%v", parts)
			assert.Greater(t, rep.Daemon.ManagerCPUSeconds, parts["manager"]-1e-9)
			assert.LessOrEqual(t, rep.Daemon.ManagerCPUSeconds, sum)
			assert.Positive(t, rep.JournalBytes)
			if classic {
				assert.Positive(t, rep.Calls.RESTPerJob)
			} else {
				assert.Positive(t, rep.Calls.ScaleSetPerJob)
			}
			assert.Positive(t, ticks)

			path := filepath.Join(t.TempDir(), "bench.json")
			require.NoError(t, rep.WriteJSON(path))
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			var back map[string]any
			require.NoError(t, json.Unmarshal(raw, &back))
			assert.EqualValues(t, 24, back["jobs_served"])
			assert.EqualValues(t, back["jobs_queued"], back["jobs_served"])
			t.Logf("%s", raw)
		})
	}
}

// TestBenchFull runs the default benchmark when RUNNER_MANAGER_BENCH_JOBS
// is set (to the number of jobs): it takes about a minute. _CLASSIC=1 runs
// classic mode, _LOG=file keeps the manager's log, _OUT=file the report.
func TestBenchFull(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNER_MANAGER_BENCH_JOBS"))
	if n == 0 {
		t.Skip("set RUNNER_MANAGER_BENCH_JOBS=2000 to run the full benchmark")
	}
	opts := simulate.BenchOptions{Jobs: n, Classic: os.Getenv("RUNNER_MANAGER_BENCH_CLASSIC") != ""}
	if path := os.Getenv("RUNNER_MANAGER_BENCH_LOG"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		defer f.Close()
		opts.Logger = slog.New(slog.NewTextHandler(f, nil))
	}
	rep, err := simulate.RunBench(context.Background(), opts, func(p simulate.Progress) {})
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("%s", b)
	if path := os.Getenv("RUNNER_MANAGER_BENCH_OUT"); path != "" {
		require.NoError(t, rep.WriteJSON(path))
	}
	require.NoError(t, err)
}
