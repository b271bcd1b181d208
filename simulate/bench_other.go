//go:build !unix

package simulate

import (
	"runtime/metrics"
	"time"
)

// processCPU is the CPU time the Go runtime estimates this process used.
func processCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// peakRSS is the memory the Go runtime holds from the system now (not a
// peak: the OS figure is not read on this platform).
func peakRSS() (uint64, string) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, "unavailable"
	}
	return s[0].Value.Uint64(), "Go runtime /memory/classes/total:bytes (current, not peak)"
}
