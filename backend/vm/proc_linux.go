package vm

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

type stopSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// ownGroup puts QEMU in a process group of its own: a signal to the
// manager's group (Ctrl-C) leaves the VMs running, to be re-adopted.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalPID(pid int, sig stopSignal) error { return syscall.Kill(pid, sig) }

func isGone(err error) bool { return errors.Is(err, syscall.ESRCH) }

// signalIfSame signals pid through a pidfd opened while it is still the
// process started at start, so that a reused pid is never signalled.
func signalIfSame(pid int, start uint64, sig stopSignal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	if !platform.Alive(pid, start) {
		return nil
	}
	err = unix.PidfdSendSignal(fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// watchExit returns a channel closed when the process (pid, start)
// exits, through a pidfd: at once, though it is not our child.
func watchExit(pid int, start uint64) (<-chan struct{}, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("pid %d: %w", pid, rm.ErrProcessGone)
		}
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	if !platform.Alive(pid, start) {
		unix.Close(fd)
		return nil, fmt.Errorf("pid %d, start %d: %w", pid, start, rm.ErrProcessGone)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == nil || !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return done, nil
}
