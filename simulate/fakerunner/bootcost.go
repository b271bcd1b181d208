package fakerunner

import (
	"context"
	"os"
	"time"
)

// idleMemory is what the listener holds from its boot to its exit, as the
// real .NET listener holds its runtime (one listener per process).
var idleMemory []byte

// spendBootCost spends what the JIT configuration prices the real
// listener's boot at (fakegithub.WithRunnerCost): it touches every page of
// FakeIdleRSSBytes, held until the process exits, and burns
// FakeBootCPUMS of CPU time on one core. It returns when both are done
// or ctx ended.
func (l *listener) spendBootCost(ctx context.Context) {
	if n := l.runner.FakeIdleRSSBytes; n > 0 {
		idleMemory = make([]byte, n)
		for i := 0; i < len(idleMemory); i += os.Getpagesize() {
			idleMemory[i] = 1
		}
	}
	want := time.Duration(l.runner.FakeBootCPUMS) * time.Millisecond
	if want <= 0 {
		return
	}
	start := processCPU()
	x := 0
	for ctx.Err() == nil && processCPU()-start < want {
		for range 100_000 {
			x++
		}
	}
	_ = x
}
