package vm

import (
	"os/exec"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// hostMarginMiB is what an attempt's cgroup holds beyond its guest's size
// where the guest has a limit: QEMU's own memory (about QEMUOverheadMiB),
// the relays of its forwards and the page cache of its disk, which the
// kernel reclaims before it kills.
const hostMarginMiB = 192

// leftoverGrace is how long the processes left in an attempt's cgroup at
// its Cleanup (QEMU, its relays) get between SIGTERM and SIGKILL.
const leftoverGrace = 2 * time.Second

// cgroups opens, at the first launch, the cgroups of the launcher's
// attempts: a scope of their own beside the native launcher's
// (platform.CgroupScope of the data directory, "-vm"). Where none can be
// made VMs run uncontained, said once.
func (l *Launcher) cgroups() *platform.Cgroups {
	l.cgOnce.Do(func() {
		c, err := platform.OpenCgroups(platform.CgroupScope(l.dir.Root()) + "-vm")
		if err != nil {
			l.log.Info("VMs run outside cgroups: QEMU is metered by its process tree, and not limited by the host", "err", err)
			return
		}
		l.mu.Lock()
		l.cg = c
		l.mu.Unlock()
	})
	return l.cg
}

// startContained starts QEMU in the attempt's cgroup, limited to the
// guest's size plus hostMarginMiB when the guest is limited (limited):
// every process it starts (the relays) is in it, metered by the kernel
// and stopped with it. Without a cgroup it starts QEMU as it is. The group
// is returned, nil when QEMU runs outside one.
func (l *Launcher) startContained(a rm.AttemptID, cmd *exec.Cmd, guestMiB int, limited bool) (*platform.Cgroup, error) {
	c := l.cgroups()
	if c == nil {
		return nil, cmd.Start()
	}
	g, err := c.Create(a)
	if err != nil {
		l.log.Warn("the VM's cgroup cannot be made: it runs without", "attempt", a.String(), "err", err)
		return nil, cmd.Start()
	}
	if limited {
		if err := g.SetMemoryLimit(uint64(guestMiB+hostMarginMiB) << 20); err != nil {
			l.log.Debug("the VM's cgroup takes no memory limit: QEMU runs unlimited by the host", "attempt", a.String(), "err", err)
		}
	}
	err = g.Start(cmd)
	switch {
	case err == nil:
		return g, nil
	case cmd.Process != nil: // started, outside its group
		l.log.Warn("QEMU started outside its cgroup; it runs without", "attempt", a.String(), "err", err)
		_ = g.Remove()
		return nil, nil
	default:
		l.log.Warn("QEMU could not start inside its cgroup; it runs without", "attempt", a.String(), "err", err)
		_ = g.Remove()
		return nil, cmd.Start()
	}
}

// GroupUsage reads what the attempt's cgroup uses now: QEMU (the guest's
// memory is QEMU's), its relays, its disk's page cache less what the
// kernel can drop; false when the VM runs outside a cgroup, or is not
// this launcher's (the meters then walk QEMU's process tree).
func (l *Launcher) GroupUsage(a rm.AttemptID) (rm.GroupUsage, bool) {
	l.mu.Lock()
	p := l.procs[a]
	l.mu.Unlock()
	if p == nil || p.group == nil {
		return rm.GroupUsage{}, false
	}
	u, err := p.group.Usage()
	return u, err == nil
}

// RunnerRunning says whether the attempt's QEMU (pid, start) still runs,
// from its exit notification (Wait for a launched one, a pidfd for an
// adopted one); known is false for a QEMU this launcher does not watch.
func (l *Launcher) RunnerRunning(a rm.AttemptID, pid int, start uint64) (running, known bool) {
	l.mu.Lock()
	p := l.procs[a]
	l.mu.Unlock()
	if p == nil || p.pid != pid || (start != 0 && p.start != start) {
		return false, false
	}
	select {
	case <-p.done:
		return false, true
	default:
		return true, true
	}
}

// CgroupsInUse says where the VMs' cgroups are, once the first launch or
// adoption opened them; "" before, and where VMs run outside cgroups.
func (l *Launcher) CgroupsInUse() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cg == nil {
		return ""
	}
	return l.cg.String() + " (VMs)"
}

// emptyGroup stops what is left in the attempt's cgroup and removes it.
func (l *Launcher) emptyGroup(a rm.AttemptID) error {
	c := l.cgroups()
	if c == nil {
		return nil
	}
	g, ok := c.Find(a)
	if !ok {
		return nil
	}
	left, err := g.Empty(leftoverGrace)
	for _, p := range left {
		l.log.Debug("stopped a process left in the VM's cgroup", "attempt", a.String(), "pid", p.PID, "command", p.Command)
	}
	if err != nil {
		return err
	}
	return g.Remove()
}

// Close removes the launcher's empty cgroups and their scope; the groups
// of VMs still running stay, to be adopted by the next manager. The
// launcher stays usable.
func (l *Launcher) Close() error {
	l.mu.Lock()
	c := l.cg
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}
