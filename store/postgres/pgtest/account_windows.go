package pgtest

import "syscall"

// account is who runs the server; on Windows always the current user.
type account struct{}

func serverAccount() (*account, error) { return nil, nil }

func (a *account) own(...string) error { return nil }

func (a *account) as() string { return "" }

func (a *account) sysProcAttr(bool) *syscall.SysProcAttr { return nil }

// processAlive is always true here: stale directories are left alone.
func processAlive(int) bool { return true }
