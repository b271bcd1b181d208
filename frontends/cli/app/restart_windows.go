package app

import (
	"errors"
	"os"
)

var errNoRestart = errors.New("a Windows daemon is not restarted in place: restart its service (Restart-Service runner-manager) or start it again")

// watchRestart: no signal restarts a daemon on Windows.
func watchRestart() (<-chan os.Signal, func()) { return nil, func() {} }

// askRestart: Windows has no signal to ask with.
func askRestart(pid int) error { return errNoRestart }

// reexec: Windows cannot replace a process's program in place.
func reexec(exe string) error { return errNoRestart }
