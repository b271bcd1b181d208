//go:build linux

package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// A slot's disk is made once, sparse, of the settings' size; the
// launcher runs warm only with mkfs.ext4.
func TestSlotDisk(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4 (e2fsprogs)")
	}
	l := &Launcher{s: Settings{SlotDiskBytes: 1 << 30}.withDefaults()}
	require.True(t, l.RunsWarm())
	slot := &rm.WarmSlot{Repo: "octo/app", N: 1, Dir: t.TempDir(), Fresh: true}
	disk, err := l.slotDisk(t.Context(), slot)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(slot.Dir, SlotDiskName), disk)
	fi, err := os.Stat(disk)
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), fi.Size())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	used := fi.Sys().(*syscall.Stat_t).Blocks * 512
	t.Logf("a new 1 GiB slot disk takes %d KiB", used>>10)
	require.Less(t, used, int64(16<<20), "sparse")
	ents, err := os.ReadDir(slot.Dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing but the disk")

	require.NoError(t, os.WriteFile(disk, []byte("kept"), 0o600))
	again, err := l.slotDisk(t.Context(), slot)
	require.NoError(t, err)
	require.Equal(t, disk, again)
	b, _ := os.ReadFile(disk)
	require.Equal(t, "kept", string(b), "a slot's disk is made once")

	_, err = l.slotDisk(t.Context(), &rm.WarmSlot{Repo: "octo/app", N: 2, Dir: "relative"})
	require.ErrorContains(t, err, "not an absolute path")
	l.s.MkfsExt4 = filepath.Join(t.TempDir(), "absent")
	require.False(t, l.RunsWarm())
	_, err = l.slotDisk(t.Context(), &rm.WarmSlot{Repo: "octo/app", N: 3, Dir: t.TempDir()})
	require.ErrorContains(t, err, "mkfs.ext4")
}
