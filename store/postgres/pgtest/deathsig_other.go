//go:build unix && !linux

package pgtest

import "syscall"

// setDeathSignal does nothing here: only Linux has a parent-death signal.
// A test binary killed in the middle may leave its server running.
func setDeathSignal(*syscall.SysProcAttr) {}
