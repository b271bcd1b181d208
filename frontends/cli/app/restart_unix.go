//go:build !windows

package app

import (
	"os"
	"os/signal"
	"syscall"
)

// restartSignal asks a running daemon to start again in place on the
// program now installed (what update sends): SIGUSR2, as nginx's binary
// upgrade, so that a terminal's hangup (SIGHUP) is never taken for it.
const restartSignal = syscall.SIGUSR2

// watchRestart delivers the restart signal; stop ends the watch.
func watchRestart() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, restartSignal)
	return ch, func() { signal.Stop(ch) }
}

// askRestart sends the restart signal to the daemon at pid.
func askRestart(pid int) error { return syscall.Kill(pid, restartSignal) }

// reexec replaces this process with the program at exe, same arguments
// and environment: same pid, so the service manager, the terminal and
// the runners (its children) see the same process.
func reexec(exe string) error { return syscall.Exec(exe, os.Args, os.Environ()) }
