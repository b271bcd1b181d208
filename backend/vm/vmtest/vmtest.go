// Package vmtest holds the helpers of tests that boot real VMs: it finds
// what they need (QEMU, qemu-img, mkfs.ext4, a static busybox, a kernel
// extracted by .ci/vm-kernel) and builds, once per test process, a guest
// image of busybox and the project's fake runner. Without those, tests
// skip, saying how to get them; with RUNNER_MANAGER_REQUIRE_VM=1 (CI) they
// fail instead.
package vmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// KernelEnv names the directory of an extracted kernel package
// (boot/vmlinuz-*, lib/modules/*), as .ci/vm-kernel prints it.
const KernelEnv = "RUNNER_MANAGER_VM_KERNEL"

// RequireEnv, set to 1, makes a test fail where it would skip.
const RequireEnv = "RUNNER_MANAGER_REQUIRE_VM"

// DefaultKernelDir is where .ci/vm-kernel extracts the kernel by default.
const DefaultKernelDir = "/var/cache/runner-manager/vm-kernel"

const howTo = `run: eval "$(sudo .ci/vm-kernel)" (docs/vm.md)`

// Kernel returns the kernel directory, after checking that everything a
// VM test needs is there; it skips the test (fails it under RequireEnv)
// when not.
func Kernel(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(KernelEnv)
	if dir == "" {
		dir = DefaultKernelDir
	}
	missing := func(what string) {
		tb.Helper()
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("VM tests required (%s=1), but %s: %s", RequireEnv, what, howTo)
		}
		tb.Skipf("VM test skipped: %s: %s", what, howTo)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*")); len(m) == 0 {
		missing("no kernel in " + dir)
	}
	for _, p := range []string{"qemu-system-x86_64", "qemu-img", "mkfs.ext4"} {
		if _, err := exec.LookPath(p); err != nil {
			missing(p + " not found")
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		if _, err := exec.LookPath("busybox"); err != nil {
			missing("no busybox")
		}
	}
	return dir
}

var image struct {
	once sync.Once
	dir  string
	im   vm.Image
	err  error
}

// FakeRunnerImage returns a guest image of busybox and the fake runner
// (fakegithub.BuildRunner), built once per test process into a temporary
// directory that RemoveImages removes (call it from TestMain).
func FakeRunnerImage(tb testing.TB) vm.Image {
	tb.Helper()
	kernel := Kernel(tb)
	image.once.Do(func() {
		image.dir, image.err = os.MkdirTemp("", "runner-manager-vmimage-")
		if image.err != nil {
			return
		}
		runner, err := fakegithub.BuildRunner()
		if err != nil {
			image.err = err
			return
		}
		root := filepath.Join(image.dir, "rootfs")
		if image.err = BusyboxRoot(root); image.err != nil {
			return
		}
		image.im, image.err = vm.Build(context.Background(), vm.BuildSpec{
			Out: filepath.Join(image.dir, "image"), Kernel: kernel, RootFS: root, Runner: runner,
			DiskFree: 256 << 20,
		})
		_ = os.RemoveAll(root)
	})
	if image.err != nil {
		tb.Fatalf("building the VM test image: %v", image.err)
	}
	return image.im
}

// RemoveImages removes what FakeRunnerImage built in this process.
func RemoveImages() {
	if image.dir != "" {
		_ = os.RemoveAll(image.dir)
	}
}

// BusyboxRoot makes dir a minimal root filesystem: the host's static
// busybox as /bin/busybox with /bin/sh, /etc's few files, and the
// directories a runner expects.
func BusyboxRoot(dir string) error {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		bb = "/bin/busybox"
	}
	for _, d := range []string{"bin", "etc", "root", "tmp", "proc", "sys", "dev", "var/tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return err
	}
	body, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), body, 0o755); err != nil {
		return err
	}
	if err := os.Symlink("busybox", filepath.Join(dir, "bin", "sh")); err != nil {
		return err
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":  "root:x:0:\n",
		"etc/hosts":  "127.0.0.1 localhost\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
