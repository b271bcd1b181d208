//go:build unix

package native

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// newProcessGroup puts the runner in a process group of its own (its pgid is
// its pid), so a stop reaches every process of its tree.
func newProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminateGroup sends SIGTERM to the process group led by pid.
func terminateGroup(pid int) error { return signalGroup(pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error { return signalGroup(pid, syscall.SIGKILL) }

func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return errors.New("refusing to signal a process group below 2")
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // nobody left in the group
	}
	return err
}

// exitCode is the exit status, or 128+N for a death by signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// runningAsRoot says the runner must be told it may run as root.
func runningAsRoot() bool { return os.Geteuid() == 0 }

func envEqual(a, b string) bool { return a == b }

func envHasPrefix(name, prefix string) bool { return strings.HasPrefix(name, prefix) }

// platformRunnerEnv adds nothing on Unix: the base list covers it.
var platformRunnerEnv []string

// envKey is how environment names compare: exactly, on Unix.
func envKey(name string) string { return name }
