package vm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/warm"
)

// SlotDiskName is a warm slot's disk in the slot's directory: a sparse raw
// file holding an ext4 file system, the guest's work folder.
const SlotDiskName = "disk.img"

// DefaultSlotDiskBytes is the size of a new slot disk when the settings
// name none: its cap, the most a repository's work folder and caches can
// take in a VM. The file is sparse: the host gives it only what the guest
// writes (a new one takes about 5 MiB).
const DefaultSlotDiskBytes = 20 << 30

// MinSlotDiskBytes is the smallest slot disk accepted: ext4's journal and
// tables take tens of MiB.
const MinSlotDiskBytes = 256 << 20

// slotSerial is the slot disk's virtio serial, by which the guest's init
// finds it whatever order the kernel probes the disks in.
const slotSerial = "rm-slot"

// workFolder is the runner's work folder in the guest: <RunnerDir>/_work,
// as the JIT configuration's .runner names it (workFolder "_work",
// relative to the runner's root). The slot disk is mounted there.
var workFolder = path.Join(RunnerDir, "_work")

var _ rm.WarmLauncher = (*Launcher)(nil)

// RunsWarm reports whether the launcher can give an attempt its slot's
// disk: it needs mkfs.ext4 (e2fsprogs) to make a new one.
func (l *Launcher) RunsWarm() bool {
	_, err := exec.LookPath(l.s.MkfsExt4)
	return err == nil
}

// slotDisk returns the slot's disk, made first if the slot has none: a
// sparse file of the settings' SlotDiskBytes formatted ext4 on the host
// (lazily: nothing written but the file system's first tables), made
// under a temporary name and renamed, so that a launch killed midway
// leaves no half-made disk. The host never mounts it: what the guest
// writes in its file system stays the guest's to read. A disk made with
// another size keeps it.
func (l *Launcher) slotDisk(ctx context.Context, slot *rm.WarmSlot) (string, error) {
	if !filepath.IsAbs(slot.Dir) {
		return "", fmt.Errorf("slot %s: its directory %q is not an absolute path", slot, slot.Dir)
	}
	disk := filepath.Join(slot.Dir, SlotDiskName)
	fi, err := os.Lstat(disk)
	switch {
	case err == nil && fi.Mode().IsRegular():
		return disk, nil
	case err == nil:
		return "", fmt.Errorf("slot %s: %s is not a regular file", slot, disk)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("slot %s: %w", slot, err)
	}
	mkfs, err := exec.LookPath(l.s.MkfsExt4)
	if err != nil {
		return "", fmt.Errorf("slot %s: making its disk needs mkfs.ext4 (e2fsprogs): %w", slot, err)
	}
	tmp := disk + ".new"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("slot %s: %w", slot, err)
	}
	err = f.Truncate(int64(l.s.SlotDiskBytes))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// lazy_itable_init and lazy_journal_init: a new sparse file reads
		// as zeros, so the tables and the journal need no writing (20 GiB
		// takes 4 MiB and 40 ms, not 133 MiB); -m 0: no blocks kept for
		// root, the guest's only user.
		out, merr := exec.CommandContext(ctx, mkfs, "-q", "-F", "-t", "ext4", "-m", "0", "-L", slotSerial,
			"-E", "lazy_itable_init=1,lazy_journal_init=1", tmp).CombinedOutput()
		if merr != nil {
			err = fmt.Errorf("mkfs.ext4: %w: %s", merr, strings.TrimSpace(string(out)))
		}
	}
	if err == nil {
		err = os.Rename(tmp, disk)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("slot %s: make its disk: %w", slot, err)
	}
	return disk, nil
}

// slotEnv is the cache variables of a warm guest's runner (warm.Env with
// the guest's work folder), but for those the attempt's environment sets:
// the operator's setting wins.
func slotEnv(spec rm.LaunchSpec) []string {
	set := map[string]bool{}
	for _, kv := range spec.Env {
		if name, _, ok := strings.Cut(kv, "="); ok {
			set[name] = true
		}
	}
	return warm.Env(workFolder, true, func(name string) bool { return set[name] })
}
