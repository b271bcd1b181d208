package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/simulate"
)

// BenchmarkJobWindow runs the same jobs, one at a time, through bare fake
// runners (the baseline scaler's: no hooks, no cgroup, no meters) and
// under the manager (its native launcher with the job report on, the
// meters sampling, its warm spare), side by side, and reports what the
// manager adds to each job's window (from its runner's start report to its
// end report, less its work): the per-job difference's p50 and p99, in
// ms. NoJobReport is the manager with job_report = false. The runners
// boot at once and for free: this is the job's window alone (bench
// --compare prices them as real runners).
//
//	go test -run '^$' -bench JobWindow -benchtime 1x ./simulate/
func BenchmarkJobWindow(b *testing.B) {
	for _, tc := range []struct {
		name string
		off  bool
	}{{"JobReport", false}, {"NoJobReport", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var rep simulate.CompareReport
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				var err error
				rep, err = simulate.RunCompare(ctx, simulate.CompareOptions{Jobs: 30, Max: 1, Gap: 400 * time.Millisecond,
					MinDuration: 200 * time.Millisecond, MaxDuration: 200 * time.Millisecond, RunnerBoot: -1, NoJobReport: tc.off,
					RunnerBootCPU: -1, RunnerIdleRSS: -1})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(rep.WindowOverhead.P50, "overhead-p50-ms")
			b.ReportMetric(rep.WindowOverhead.P99, "overhead-p99-ms")
			b.ReportMetric(rep.Manager.Window.P50, "manager-beyond-work-p50-ms")
			b.ReportMetric(rep.Baseline.Window.P50, "bare-beyond-work-p50-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
