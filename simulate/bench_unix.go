//go:build unix

package simulate

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the user + system time this process used so far, its
// children (the runners) excluded.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
