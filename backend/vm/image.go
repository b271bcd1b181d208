package vm

import (
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cavaliergopher/cpio"
)

// The files of an image directory (docs/vm.md: the image contract).
const (
	// KernelFile is the guest's kernel (a bzImage).
	KernelFile = "vmlinuz"
	// InitrdFile is the initramfs: busybox, the guest init, the modules.
	InitrdFile = "initrd.img"
	// BaseDiskFile is the read-only base disk (raw, ext4): the guest's root
	// filesystem with the runner installed at RunnerDir. Each attempt
	// boots a qcow2 overlay of it and never writes the base.
	BaseDiskFile = "base.raw"
)

// RunnerDir is where the base disk holds the installed runner, so that
// RunnerDir/bin/Runner.Listener is its listener.
const RunnerDir = "/runner"

// DefaultDiskFree is the free space a built base disk gets beyond its
// files: what a job may write (_work/, caches, /tmp on disk). The file is
// sparse, and every write lands in the attempt's overlay, so it costs
// only what jobs write.
const DefaultDiskFree = 8 << 30

//go:embed guest/init
var guestInit []byte

// Image is a guest image: the directory and its three files.
type Image struct {
	Dir      string
	Kernel   string
	Initrd   string
	BaseDisk string
}

// OpenImage checks that dir holds an image (KernelFile, InitrdFile,
// BaseDiskFile, each a regular file) and returns it.
func OpenImage(dir string) (Image, error) {
	if dir == "" {
		return Image{}, errors.New("vm image: no directory named")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Image{}, fmt.Errorf("vm image %s: %w", dir, err)
	}
	im := Image{Dir: abs, Kernel: filepath.Join(abs, KernelFile),
		Initrd: filepath.Join(abs, InitrdFile), BaseDisk: filepath.Join(abs, BaseDiskFile)}
	for _, f := range []string{im.Kernel, im.Initrd, im.BaseDisk} {
		fi, err := os.Stat(f)
		if err != nil {
			return Image{}, fmt.Errorf("vm image %s: %w (build one with `runner-manager vm image build`)", dir, err)
		}
		if !fi.Mode().IsRegular() {
			return Image{}, fmt.Errorf("vm image %s: %s is not a regular file", dir, filepath.Base(f))
		}
	}
	return im, nil
}

// BuildSpec is what Build makes an image from.
type BuildSpec struct {
	// Out is the image directory; created if missing. An image there is
	// replaced.
	Out string
	// Kernel is a directory holding boot/vmlinuz-<version> and
	// lib/modules/<version>/ (an extracted kernel package, or "/" for the
	// host's own): the newest vmlinuz is taken, with its modules.
	Kernel string
	// RootFS is the guest's root filesystem (a directory: a busybox tree,
	// a container image's export); RunnerDir on it is replaced by Runner.
	RootFS string
	// Runner is an installed runner (holding bin/Runner.Listener).
	Runner string
	// Busybox is the static busybox the initramfs runs; "" finds
	// busybox on PATH, then /bin/busybox.
	Busybox string
	// DiskFree is the base disk's free space; 0 is DefaultDiskFree.
	DiskFree int64
	// Progress, if set, is told each step as it starts.
	Progress func(step string)
}

// Build makes an image in spec.Out: the kernel copied, an initramfs (the
// guest init, busybox, the modules GuestModules need, in load order) and
// a base disk made by mkfs.ext4 from the root filesystem with the runner
// at RunnerDir. It needs mkfs.ext4 (e2fsprogs).
func Build(ctx context.Context, spec BuildSpec) (Image, error) {
	say := spec.Progress
	if say == nil {
		say = func(string) {}
	}
	for name, dir := range map[string]string{"kernel": spec.Kernel, "root filesystem": spec.RootFS, "runner": spec.Runner} {
		if dir == "" {
			return Image{}, fmt.Errorf("vm image build: no %s directory", name)
		}
	}
	if _, err := os.Stat(filepath.Join(spec.Runner, "bin", "Runner.Listener")); err != nil {
		return Image{}, fmt.Errorf("vm image build: %s is not an installed runner: %w", spec.Runner, err)
	}
	busybox, err := staticBusybox(spec.Busybox)
	if err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	kernel, ver, err := findKernel(spec.Kernel)
	if err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	say("modules of kernel " + ver)
	km, err := openModules(spec.Kernel, ver)
	if err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	mods, err := km.loadOrder(GuestModules)
	if err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	say("kernel " + filepath.Base(kernel))
	if err := copyFile(kernel, filepath.Join(spec.Out, KernelFile+".new"), 0o644); err != nil {
		return Image{}, fmt.Errorf("vm image build: kernel: %w", err)
	}
	say(fmt.Sprintf("initramfs (busybox, init, %d modules)", len(mods)))
	if err := writeInitramfs(filepath.Join(spec.Out, InitrdFile+".new"), busybox, mods); err != nil {
		return Image{}, fmt.Errorf("vm image build: initramfs: %w", err)
	}
	say("base disk from " + spec.RootFS + " and the runner " + spec.Runner)
	free := spec.DiskFree
	if free <= 0 {
		free = DefaultDiskFree
	}
	if err := makeBaseDisk(ctx, filepath.Join(spec.Out, BaseDiskFile+".new"), spec.RootFS, spec.Runner, free); err != nil {
		return Image{}, fmt.Errorf("vm image build: base disk: %w", err)
	}
	for _, f := range []string{KernelFile, InitrdFile, BaseDiskFile} {
		p := filepath.Join(spec.Out, f)
		if err := os.Rename(p+".new", p); err != nil {
			return Image{}, fmt.Errorf("vm image build: %w", err)
		}
	}
	// The base is never written: attempts boot overlays of it.
	if err := os.Chmod(filepath.Join(spec.Out, BaseDiskFile), 0o444); err != nil {
		return Image{}, fmt.Errorf("vm image build: %w", err)
	}
	say("done")
	return OpenImage(spec.Out)
}

// staticBusybox finds the busybox to put in the initramfs and checks that
// it is static: the initramfs has no C library.
func staticBusybox(path string) (string, error) {
	if path == "" {
		if p, err := exec.LookPath("busybox"); err == nil {
			path = p
		} else {
			path = "/bin/busybox"
		}
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("busybox %s: %w (install a static busybox: Debian's busybox-static)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("busybox %s is dynamically linked: the initramfs needs a static one (Debian's busybox-static)", path)
		}
	}
	return path, nil
}

// writeInitramfs writes a newc cpio archive (uncompressed: the kernel
// unpacks it without decompressing, and QEMU loads it in one read) with
// /init, /bin/busybox and the modules in /lib/modules, their load order in
// /lib/modules/order.
func writeInitramfs(path, busybox string, mods []string) (err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := cpio.NewWriter(f)
	now := time.Now()
	dir := func(name string) error {
		return w.WriteHeader(&cpio.Header{Name: name, Mode: cpio.TypeDir | 0o755, ModTime: now, Links: 2})
	}
	file := func(name string, mode cpio.FileMode, body []byte) error {
		if err := w.WriteHeader(&cpio.Header{Name: name, Mode: cpio.TypeReg | mode, Size: int64(len(body)), ModTime: now, Links: 1}); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	}
	for _, d := range []string{"bin", "dev", "proc", "sys", "run", "tmp", "newroot", "lib", "lib/modules"} {
		if err := dir(d); err != nil {
			return err
		}
	}
	if err := file("init", 0o755, guestInit); err != nil {
		return err
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	if err := file("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	var order bytes.Buffer
	for _, m := range mods {
		body, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		name := filepath.Base(m)
		if err := file("lib/modules/"+name, 0o644, body); err != nil {
			return err
		}
		order.WriteString(name + "\n")
	}
	if err := file("lib/modules/order", 0o644, order.Bytes()); err != nil {
		return err
	}
	return w.Close()
}

// makeBaseDisk makes an ext4 filesystem image at path holding rootfs with
// the runner at RunnerDir, sized to its files plus free. The tree is
// staged beside path with hard links (copies across filesystems) and
// handed to mkfs.ext4 -d; no journal: the disk is written only through
// throwaway overlays.
func makeBaseDisk(ctx context.Context, path, rootfs, runner string, free int64) error {
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return fmt.Errorf("mkfs.ext4 not found (install e2fsprogs): %w", err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(path), ".stage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	size, err := stageTree(rootfs, stage, filepath.Join(stage, RunnerDir))
	if err != nil {
		return fmt.Errorf("root filesystem: %w", err)
	}
	n, err := stageTree(runner, filepath.Join(stage, RunnerDir), "")
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	size += n
	// ext4's own metadata takes a few percent; round up to MiB.
	total := (size+size/8+free)>>20 + 64
	_ = os.Remove(path)
	out, err := exec.CommandContext(ctx, mkfs, "-q", "-F", "-t", "ext4", "-O", "^has_journal",
		"-L", "runner-root", "-E", "root_owner=0:0", "-d", stage, path, fmt.Sprintf("%dM", total)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// stageTree reproduces the tree src in dst, files hard-linked (copied
// across filesystems), and returns the bytes of its regular files. skip,
// if set, is a path under dst not to fill from src (the runner's place).
// Device nodes, sockets and pipes are left out: the guest's devtmpfs
// provides /dev.
func stageTree(src, dst, skip string) (int64, error) {
	var size int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if skip != "" && (target == skip || strings.HasPrefix(target, skip+string(filepath.Separator))) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, fi.Mode().Perm()|fi.Mode()&(fs.ModeSetgid|fs.ModeSticky))
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case fi.Mode().IsRegular():
			size += fi.Size()
			if err := os.Link(p, target); err == nil {
				return nil
			}
			return copyFile(p, target, fi.Mode().Perm())
		}
		return nil
	})
	return size, err
}

func copyFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
