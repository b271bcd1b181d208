//go:build unix && !linux

package simulate

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// peakRSS is this process's peak resident memory: getrusage's ru_maxrss
// (bytes on macOS, KiB elsewhere).
func peakRSS() (uint64, string) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, "unavailable: " + err.Error()
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return uint64(ru.Maxrss), "getrusage ru_maxrss"
	}
	return uint64(ru.Maxrss) << 10, "getrusage ru_maxrss"
}
