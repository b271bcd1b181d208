//go:build windows

package native

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// newProcessGroup gives nothing on Windows: there is no process group to
// signal. The gap: Stop kills the listener only; processes a job started
// outlive it until a job object holds the tree.
func newProcessGroup() *syscall.SysProcAttr { return nil }

// terminateGroup kills the process: Windows has no SIGTERM for a console
// program without a console of ours to send CTRL_BREAK to.
func terminateGroup(pid int) error { return killGroup(pid) }

// killGroup kills the process (not its descendants: see newProcessGroup).
func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil // gone
	}
	defer p.Release()
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	return ps.ExitCode()
}

func runningAsRoot() bool { return false }

func envEqual(a, b string) bool { return strings.EqualFold(a, b) }

func envHasPrefix(name, prefix string) bool {
	return len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix)
}

// platformRunnerEnv are the variables Windows programs need to work at all
// (the system's directories, the shell, the executable extensions, the
// user's profile folders, temporary directories) and a few read for the
// machine's description. None carries a credential.
var platformRunnerEnv = []string{
	"SystemRoot", "SystemDrive", "windir", "ComSpec", "PATHEXT", "TEMP", "TMP",
	"USERPROFILE", "APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles*",
	"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS",
}

// envKey is how environment names compare: without case, on Windows.
func envKey(name string) string { return strings.ToUpper(name) }
