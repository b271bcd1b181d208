package vm_test

import (
	"context"
	"sort"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
)

// BenchmarkLaunch is the manager's share of a VM start: from a JIT
// configuration in hand to QEMU running (the overlay, the fw_cfg files,
// the exec). Each VM is stopped at once, outside the timing. The p50 and
// p90 are reported (goal: p50 ≤ 50 ms).
func BenchmarkLaunch(b *testing.B) {
	im := vmtest.FakeRunnerImage(b)
	l, err := vm.NewLauncher(b.TempDir(), vm.Settings{Image: im.Dir, MemoryMiB: 256, CPUs: 1, Accel: vm.AccelTCG,
		Forward: []string{"127.0.0.1:9"}})
	if err != nil {
		b.Fatal(err)
	}
	jit := jitOf(b, map[string]any{".runner": map[string]any{"serverUrl": "http://127.0.0.1:9/"}})
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		a := rm.NewAttemptID()
		t0 := time.Now()
		p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit})
		took = append(took, time.Since(t0))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Stop(context.Background(), time.Second)
		_ = l.Cleanup(a, false)
		b.StartTimer()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}
