//go:build linux

package native

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// watchExit returns a channel closed when the process (pid, start) exits,
// seen through a pidfd the moment it happens. Kernels without pidfd_open
// (before 5.3) fall back to looking every pollEvery.
func watchExit(pid int, start uint64, pollEvery time.Duration) (<-chan struct{}, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil, rm.ErrProcessGone
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM):
		return pollExit(pid, start, pollEvery)
	case err != nil:
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	// Opened first, checked second: if (pid, start) is alive now, the pidfd
	// refers to that very process, not to a later one given the same pid.
	if !platform.Alive(pid, start) {
		_ = unix.Close(fd)
		return nil, rm.ErrProcessGone
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		waitPidfd(fd)
	}()
	return done, nil
}

// awaitChild returns once this process's child pid has exited, leaving it
// unreaped: the Wait that follows returns at once. It waits in the
// runtime's poller through a pidfd, where Wait alone would hold an OS
// thread in waitid(2) for the child's whole life (one a live runner, each
// with its stack and, once it has run SQLite's C code, a C heap arena). A
// child not yet waited for cannot be another process, so the pidfd is its.
// Without pidfds it returns at once.
func awaitChild(pid int) {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		waitPidfd(fd)
	}
}

// waitPidfd blocks until the pidfd is readable (the process exited) and
// closes it. It waits in the runtime's poller, holding no thread, and falls
// back to a blocking poll(2) if the poller refuses the descriptor.
func waitPidfd(fd int) {
	if err := unix.SetNonblock(fd, true); err == nil {
		f := os.NewFile(uintptr(fd), "pidfd")
		defer f.Close()
		if rc, err := f.SyscallConn(); err == nil {
			ready := false
			err = rc.Read(func(fd uintptr) bool {
				ready = pidfdReadable(int(fd), 0)
				return ready
			})
			if err == nil && ready {
				return
			}
			// Not pollable here: wait on the raw descriptor below.
			_ = rc.Control(func(fd uintptr) { pidfdReadable(int(fd), -1) })
		}
		return
	}
	defer unix.Close(fd)
	pidfdReadable(fd, -1)
}

// pidfdReadable polls fd for up to timeoutMs (-1: forever, until readable).
func pidfdReadable(fd int, timeoutMs int) bool {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, timeoutMs)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// An unusable pidfd: report exit rather than watch forever.
			return true
		}
		return n > 0
	}
}
