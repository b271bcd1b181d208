package vm_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cavaliergopher/cpio"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
)

// The initramfs holds the guest init, busybox and the modules the guest
// needs, each after those it depends on (virtio_ring before virtio, as
// the modules' own modinfo says); the base disk is read-only.
func TestBuildImage(t *testing.T) {
	im := vmtest.FakeRunnerImage(t)
	f, err := os.Open(im.Initrd)
	require.NoError(t, err)
	defer f.Close()
	r := cpio.NewReader(f)
	files := map[string]string{}
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		files[h.Name] = string(body)
	}
	require.Contains(t, files, "init")
	require.Contains(t, files, "bin/busybox")
	order := strings.Fields(files["lib/modules/order"])
	for _, m := range order {
		require.Contains(t, files, "lib/modules/"+m)
	}
	before := func(a, b string) {
		t.Helper()
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		require.True(t, ia >= 0 && ib >= 0 && ia < ib, "%s before %s in %v", a, b, order)
	}
	before("virtio_ring.ko", "virtio.ko")
	before("virtio.ko", "virtio_mmio.ko")
	before("failover.ko", "net_failover.ko")
	before("net_failover.ko", "virtio_net.ko")
	before("virtio.ko", "virtio_blk.ko")
	require.Contains(t, order, "qemu_fw_cfg.ko")

	fi, err := os.Stat(im.BaseDisk)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
}

func TestBuildRefuses(t *testing.T) {
	kernel := vmtest.Kernel(t)
	root := t.TempDir()
	require.NoError(t, vmtest.BusyboxRoot(root))
	notRunner := t.TempDir()
	_, err := vm.Build(context.Background(), vm.BuildSpec{Out: t.TempDir(), Kernel: kernel, RootFS: root, Runner: notRunner})
	require.ErrorContains(t, err, "is not an installed runner")

	runner := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(runner, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(runner, "bin", "Runner.Listener"), nil, 0o755))
	_, err = vm.Build(context.Background(), vm.BuildSpec{Out: t.TempDir(), Kernel: kernel, RootFS: root, Runner: runner, Busybox: "/bin/bash"})
	require.ErrorContains(t, err, "dynamically linked")

	_, err = vm.Build(context.Background(), vm.BuildSpec{Out: t.TempDir(), Kernel: t.TempDir(), RootFS: root, Runner: runner})
	require.ErrorContains(t, err, "no boot/vmlinuz-*")
}
