//go:build !linux

package native

import "time"

// watchExit returns a channel closed when the process (pid, start) exits,
// looking every pollEvery: the OS gives no exit notification for a process
// that is not our child.
func watchExit(pid int, start uint64, pollEvery time.Duration) (<-chan struct{}, error) {
	return pollExit(pid, start, pollEvery)
}

// awaitChild returns at once: Wait waits for the child.
func awaitChild(int) {}
