package vm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GuestModules are the kernel modules the guest needs, beyond what its
// kernel has built in: the virtio transport of QEMU's microvm machine,
// its network and block devices, and fw_cfg, where the guest reads its
// configuration. Their dependencies come along (from each module's own
// modinfo: a kernel package extracted, not installed, has no modules.dep).
var GuestModules = []string{"virtio_mmio", "virtio_net", "virtio_blk", "qemu_fw_cfg"}

// kernelModules are the modules of one kernel's tree,
// <kernel>/lib/modules/<version>/: where each one's file is, which are
// built in.
type kernelModules struct {
	dir     string            // lib/modules/<version>
	files   map[string]string // module name → path of its .ko
	builtin map[string]bool
}

// modName is a module's canonical name: the kernel takes "-" and "_" as
// one.
func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// openModules indexes the modules of kernel version ver under root
// (root/lib/modules/ver).
func openModules(root, ver string) (*kernelModules, error) {
	dir := filepath.Join(root, "lib", "modules", ver)
	km := &kernelModules{dir: dir, files: map[string]string{}, builtin: map[string]bool{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case d.IsDir():
		case strings.HasSuffix(name, ".ko"):
			km.files[modName(strings.TrimSuffix(name, ".ko"))] = p
		case strings.Contains(name, ".ko."):
			// Compressed (.ko.xz, .ko.zst): noted so that a wanted one is
			// refused by name rather than reported missing.
			base := name[:strings.Index(name, ".ko.")]
			if _, ok := km.files[modName(base)]; !ok {
				km.files[modName(base)] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kernel modules: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if n := filepath.Base(strings.TrimSpace(sc.Text())); strings.HasSuffix(n, ".ko") {
				km.builtin[modName(strings.TrimSuffix(n, ".ko"))] = true
			}
		}
	}
	return km, nil
}

// loadOrder returns the files of the wanted modules and of everything
// they depend on, each after its dependencies, built-in ones left out.
func (km *kernelModules) loadOrder(wanted []string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		name = modName(name)
		switch state[name] {
		case 1:
			return fmt.Errorf("kernel module %s: dependency cycle", name)
		case 2:
			return nil
		}
		if km.builtin[name] {
			state[name] = 2
			return nil
		}
		path, ok := km.files[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("kernel module %s (needed by %s) is neither in %s nor built in", name, from, km.dir)
			}
			return fmt.Errorf("kernel module %s is neither in %s nor built in", name, km.dir)
		}
		if !strings.HasSuffix(path, ".ko") {
			return fmt.Errorf("kernel module %s is compressed (%s): the guest's busybox insmod loads plain .ko files; decompress the tree first", name, filepath.Base(path))
		}
		state[name] = 1
		deps, err := moduleDepends(path)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, path)
		return nil
	}
	for _, w := range wanted {
		if err := visit(w, ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// moduleDepends reads the "depends=" entry of a module's .modinfo
// section: the modules it needs loaded first.
func moduleDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("kernel module %s: no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("kernel module %s: %w", path, err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, d)
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}

// errNoKernel: a kernel directory holds no boot/vmlinuz-*.
var errNoKernel = errors.New("no boot/vmlinuz-* in the kernel directory")

// findKernel returns the newest boot/vmlinuz-<version> under root (an
// extracted kernel package, or /) and its version.
func findKernel(root string) (path, ver string, err error) {
	m, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(m) == 0 {
		return "", "", fmt.Errorf("%s: %w", root, errNoKernel)
	}
	path = m[len(m)-1] // Glob sorts; versions of one series sort alike
	return path, strings.TrimPrefix(filepath.Base(path), "vmlinuz-"), nil
}
