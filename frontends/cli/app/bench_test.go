package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// The bench end to end with tiny figures: the fake GitHub, real runner
// processes, a real journal, through the parser; the JSON report says
// every queued job was served.
func TestBench(t *testing.T) {
	e := newEnv(t)
	out, prof := filepath.Join(t.TempDir(), "bench.json"), filepath.Join(t.TempDir(), "cpu.out")
	stdout := e.ok("bench", "--jobs", "20", "--policies", "2", "--duration", "2s", "--host-memory", "8GiB", "--out", out, "--cpu-profile", prof)
	assert.Contains(t, stdout, "bench: 20 jobs over 2s, 2 policies, scale-set mode, host memory 8GiB")
	assert.Contains(t, stdout, "jobs served:          20 of 20 queued")
	assert.Regexp(t, `wait for a runner:\s+p50 \S+, p95 \S+, p99 \S+`, stdout)
	assert.Contains(t, stdout, "report: "+out)

	fi, err := os.Stat(prof)
	require.NoError(t, err)
	assert.Positive(t, fi.Size(), "a CPU profile was written")

	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep struct {
		Queued    int `json:"jobs_queued"`
		Served    int `json:"jobs_served"`
		PerPolicy []struct {
			Max         int `json:"max"`
			PeakRunners int `json:"peak_runners"`
		} `json:"per_policy"`
		Admission struct {
			HostMemoryBytes uint64 `json:"host_memory_bytes"`
		} `json:"admission"`
		Daemon struct {
			CPUSeconds   float64 `json:"cpu_seconds"`
			PeakRSSBytes uint64  `json:"peak_rss_bytes"`
		} `json:"daemon"`
	}
	require.NoError(t, json.Unmarshal(raw, &rep), string(raw))
	assert.Equal(t, 20, rep.Queued)
	assert.Equal(t, rep.Queued, rep.Served, "every queued job served")
	require.Len(t, rep.PerPolicy, 2)
	for _, p := range rep.PerPolicy {
		assert.LessOrEqual(t, p.PeakRunners, p.Max)
	}
	assert.EqualValues(t, 8<<30, rep.Admission.HostMemoryBytes)
	assert.Positive(t, rep.Daemon.CPUSeconds)
	assert.Positive(t, rep.Daemon.PeakRSSBytes)
}

func TestBenchRefusesBadFigures(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--jobs", "0"), "at least 1")
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--host-memory", "lots"), "size")
}

func TestBenchHelpGolden(t *testing.T) {
	e := newEnv(t)
	r := e.runRaw("bench", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	golden(t, "help-root-bench", r.stdout)
}

func TestBenchCompareRefusesBadFigures(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--compare", "--repeat", "0"), "--repeat must be at least 1")
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--compare", "--day=-1s"), "--day must not be negative")
	assert.Contains(t, e.fails(app.ExitInvalid, "bench", "--compare", "--day-jobs", "0"), "--day-jobs must be at least 1")
}
