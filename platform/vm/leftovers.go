package vm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	rm "github.com/runner-manager/runner-manager"
)

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
	root := filepath.Join(dataDir, vmDir)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, e := range ents {
		a, err := rm.ParseAttemptID(e.Name())
		if err != nil || a.IsZero() || !e.IsDir() {
			continue
		}
		out = append(out, Leftover{Attempt: a, Dir: filepath.Join(root, e.Name())})
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
