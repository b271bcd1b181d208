//go:build linux

package container_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// BenchmarkAttemptStart measures an attempt's start, from Launch to its
// runner connected to GitHub (online at the fake), for the native launcher
// and the container launcher in turn, in the same run, and reports the
// p50 and p95 of each and what the container adds at p50 (goal: ≤ 300 ms).
// The JIT configuration is fetched before the clock starts: GitHub's
// round trip is not the launcher's. Run with -benchtime=20x or more.
//
//	go test -run '^$' -bench AttemptStart -benchtime=20x ./backend/container/
func BenchmarkAttemptStart(b *testing.B) {
	gh := newFakeGitHub(b)
	cl, _ := newLauncher(b, container.Settings{})
	install, err := fakegithub.BuildRunner()
	require.NoError(b, err)
	nl := native.NewLauncher(b.TempDir())
	b.Cleanup(func() { _ = nl.Close() })
	launchers := []struct {
		name string
		l    launcher
		dir  string
	}{{"native", nl, install}, {"container", cl, ""}}
	times := make([][]time.Duration, len(launchers))
	// One of each first, unmeasured: the image's layers and the runner's
	// pages are then in the page cache for both.
	for i := -1; i < b.N; i++ {
		for k, ln := range launchers {
			spec, jit := gh.spec(b)
			spec.RunnerDir = ln.dir
			start := time.Now()
			p, err := ln.l.Launch(b.Context(), spec)
			require.NoError(b, err)
			require.NoError(b, gh.fake.WaitFor(ctxFor(b, 30*time.Second), func() bool { return gh.online(jit.RunnerName) }))
			if i >= 0 {
				times[k] = append(times[k], time.Since(start))
			}
			require.NoError(b, p.Stop(ctxFor(b, 30*time.Second), 10*time.Second))
			require.NoError(b, ln.l.Cleanup(spec.Attempt, false))
		}
	}
	b.StopTimer()
	var p50 [2]time.Duration
	for k, ln := range launchers {
		p50[k] = percentile(times[k], 50)
		p95 := percentile(times[k], 95)
		b.ReportMetric(float64(p50[k].Microseconds())/1000, ln.name+"-p50-ms")
		b.ReportMetric(float64(p95.Microseconds())/1000, ln.name+"-p95-ms")
		b.Logf("%-9s start to connected over %d: p50 %v, p95 %v", ln.name, len(times[k]), p50[k].Round(time.Millisecond), p95.Round(time.Millisecond))
	}
	b.ReportMetric(float64((p50[1]-p50[0]).Microseconds())/1000, "added-p50-ms")
}

// launcher is what the benchmark needs of both launchers.
type launcher interface {
	Launch(context.Context, rm.LaunchSpec) (rm.Process, error)
	Cleanup(a rm.AttemptID, failed bool) error
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}
