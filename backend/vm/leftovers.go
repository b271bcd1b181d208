package vm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// Roots lists the attempts that have a directory under <data>/vm/, in one
// ReadDir: what a crash between an attempt's conclusion and its Cleanup
// leaves, or one before the journal recorded its QEMU (rm.RootLister). The
// supervisor cleans those no live attempt owns, at start and while it
// runs, with Cleanup, which kills a QEMU still running there. Kept failed
// logs (.failed/), the overlays' templates and entries that name no
// attempt are not listed; a missing directory lists nothing. An attempt's
// directory outlives its cgroup (made after it, removed before it), so
// no cgroup is left without its directory.
func (l *Launcher) Roots() ([]rm.AttemptID, error) {
	ids, err := attemptDirs(l.dir.VMs())
	if err != nil {
		return nil, fmt.Errorf("list VM directories: %w", err)
	}
	return ids, nil
}

// attemptDirs lists the attempts that have a directory under root (the
// data directory's vm/), in one ReadDir: entries that name no attempt
// (.failed/, the overlays' templates) are not listed; a missing root
// lists nothing.
func attemptDirs(root string) ([]rm.AttemptID, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []rm.AttemptID
	for _, e := range ents {
		a, err := rm.ParseAttemptID(e.Name())
		if err != nil || a.IsZero() || !e.IsDir() || a.String() != e.Name() {
			continue // not ours to judge
		}
		ids = append(ids, a)
	}
	return ids, nil
}

// killOrphan kills the QEMU running in dir that this launcher neither
// launched nor adopted (one launched by a manager killed before the
// journal had its pid), and waits, up to grace, for it to be gone:
// SIGKILL, as nothing of a VM no attempt owns is worth keeping.
func killOrphan(dir string, grace time.Duration) error {
	pids := qemusIn(dir)
	for _, pid := range pids {
		if err := signalPID(pid, sigKill); err != nil && !isGone(err) {
			return fmt.Errorf("kill QEMU %d of %s: %w", pid, dir, err)
		}
	}
	deadline := time.Now().Add(grace)
	for len(pids) > 0 && time.Now().Before(deadline) {
		pids = slices.DeleteFunc(pids, func(pid int) bool { return !namesDir(pid, dir) })
		if len(pids) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(pids) > 0 {
		return fmt.Errorf("QEMU %v of %s still runs %s after SIGKILL", pids, dir, grace)
	}
	return nil
}

// qemusIn lists the processes whose command line is a QEMU of the attempt
// directory dir, from /proc.
func qemusIn(dir string) []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, pe := range procs {
		pid, err := strconv.Atoi(pe.Name())
		if err == nil && namesDir(pid, dir) {
			out = append(out, pid)
		}
	}
	return out
}

// Leftover is a VM directory under a data directory, and its QEMU if one
// still runs.
type Leftover struct {
	Attempt rm.AttemptID
	Dir     string
	QEMU    int // pid, 0 if none runs
}

// Leftovers lists the attempt directories of VMs under dataDir (kept
// failed logs and templates excepted) with their QEMU processes, from
// /proc: a doctor tells those no live attempt owns.
func Leftovers(dataDir string) ([]Leftover, error) {
	d := datadir.New(dataDir)
	ids, err := attemptDirs(d.VMs())
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, a := range ids {
		out = append(out, Leftover{Attempt: a, Dir: d.VM(a)})
	}
	if len(out) == 0 {
		return nil, nil
	}
	procs, _ := os.ReadDir("/proc")
	for _, pe := range procs {
		pid, err := strconv.Atoi(pe.Name())
		if err != nil {
			continue
		}
		for i := range out {
			if out[i].QEMU == 0 && namesDir(pid, out[i].Dir) {
				out[i].QEMU = pid
			}
		}
	}
	return out, nil
}

// RemoveLeftover kills a leftover's QEMU (SIGKILL: nothing of a VM is
// worth keeping once no attempt owns it) and removes its directory.
func RemoveLeftover(lo Leftover) error {
	if lo.QEMU > 0 && namesDir(lo.QEMU, lo.Dir) {
		if err := signalPID(lo.QEMU, sigKill); err != nil && !isGone(err) {
			return fmt.Errorf("kill QEMU %d: %w", lo.QEMU, err)
		}
	}
	return os.RemoveAll(lo.Dir)
}
