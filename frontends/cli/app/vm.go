package app

import (
	"context"
	"time"

	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// VMCmd groups the vm backend's commands.
type VMCmd struct {
	Image VMImageCmd `cmd:"" help:"Guest images of the vm backend."`
}

// VMImageCmd groups the image commands.
type VMImageCmd struct {
	Build VMImageBuildCmd `cmd:"" help:"Build a guest image (kernel, initramfs, read-only base disk) from a runner and a root filesystem."`
}

// VMImageBuildCmd builds a guest image.
type VMImageBuildCmd struct {
	Out     string `arg:"" help:"The image directory to write (a policy's --image)." type:"path"`
	RootFS  string `name:"rootfs" required:"" help:"The guest's root filesystem: a directory (a busybox tree, a container image's export)." placeholder:"DIR" type:"path"`
	Kernel  string `help:"A directory holding boot/vmlinuz-* and lib/modules/ (an extracted kernel package; default the host's own, /)." default:"/" placeholder:"DIR" type:"path"`
	Runner  string `help:"An installed runner directory (default: the newest runner installed in the data directory)." placeholder:"DIR" type:"path"`
	Busybox string `help:"The static busybox the initramfs runs (default: busybox on PATH)." placeholder:"FILE" type:"path"`
}

// Help is the long help of vm image build.
func (c *VMImageBuildCmd) Help() string {
	return `A guest image is a directory of three files: the kernel, an initramfs
(busybox, the guest's init and the virtio modules it loads) and a read-only
base disk (ext4) holding the root filesystem with the runner at /runner.
Each attempt boots it on a throwaway overlay: nothing of one job is seen by
the next. docs/vm.md is the image contract.

It needs mkfs.ext4 (e2fsprogs) and a static busybox (Debian's
busybox-static). The kernel's virtio drivers may be modules: they are found
in its lib/modules/<version>/ with what they depend on.

Example (Debian's cloud kernel, extracted, not installed):
  apt-get download linux-image-6.1.0-57-cloud-amd64
  dpkg-deb -x linux-image-*.deb /var/cache/vm-kernel
  runner-manager vm image build /var/lib/runner-manager/images/debian \
      --rootfs ./rootfs --kernel /var/cache/vm-kernel`
}

// Run builds the image, saying each step.
func (c *VMImageBuildCmd) Run(ctx context.Context, a *App) error {
	runner := c.Runner
	if runner == "" {
		dir, err := a.DataDir()
		if err != nil {
			return err
		}
		if runner, err = runnerpkg.Newest(dir); err != nil {
			return invalid("no --runner, and %v: install one with `runner-manager runner install`", err)
		}
	}
	began := time.Now()
	im, err := vm.Build(ctx, vm.BuildSpec{Out: c.Out, Kernel: c.Kernel, RootFS: c.RootFS, Runner: runner,
		Busybox: c.Busybox, Progress: func(step string) { a.printf("  %s\n", step) }})
	if err != nil {
		return err
	}
	a.printf("built VM image %s in %v: use it with `policy add … --backend vm --image %s`\n",
		im.Dir, time.Since(began).Round(time.Millisecond), im.Dir)
	return nil
}
