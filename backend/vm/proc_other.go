//go:build !linux

package vm

import (
	"errors"
	"os"
	"syscall"
)

// The VM backend runs QEMU's microvm machine on Linux only; elsewhere
// it builds, and every launch fails.

type stopSignal = os.Signal

var (
	sigTerm stopSignal = os.Interrupt
	sigKill stopSignal = os.Kill
)

var errNotLinux = errors.New("the vm backend runs on Linux only")

func ownGroup() *syscall.SysProcAttr { return nil }

func signalPID(pid int, sig stopSignal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

func isGone(err error) bool { return errors.Is(err, os.ErrProcessDone) }

func signalIfSame(int, uint64, stopSignal) error { return errNotLinux }

func watchExit(int, uint64) (<-chan struct{}, error) { return nil, errNotLinux }
