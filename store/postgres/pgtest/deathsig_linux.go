package pgtest

import "syscall"

// setDeathSignal makes the server quit at once (SIGQUIT: an immediate
// shutdown) when the thread that started it ends.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGQUIT }
