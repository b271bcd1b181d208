//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// account is the unprivileged user that runs the server when the tests run
// as root (initdb and postgres refuse to run as root).
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount is nil (the current user) unless the tests run as root:
// then Debian's postgres user, else nobody.
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run the server as (PostgreSQL refuses to run as root)")
}

// own gives paths to the account.
func (a *account) own(paths ...string) error {
	if a == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(a.uid), int(a.gid)); err != nil {
			return fmt.Errorf("give %s to user %s: %w", p, a.name, err)
		}
	}
	return nil
}

// as says whom the server runs as, for an error message.
func (a *account) as() string {
	if a == nil {
		return ""
	}
	return " as user " + a.name
}

// sysProcAttr runs a process as the account, in a process group of its
// own (a ^C of the test run reaches it only through Stop), with a signal to
// quit when its parent dies if deathSignal.
func (a *account) sysProcAttr(deathSignal bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, NoSetGroups: true}
	}
	if deathSignal {
		setDeathSignal(attr)
	}
	return attr
}

// processAlive reports whether a process with that pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
