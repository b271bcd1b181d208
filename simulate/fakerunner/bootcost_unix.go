//go:build unix

package fakerunner

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
