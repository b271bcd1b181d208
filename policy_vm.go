package runnermanager

import (
	"fmt"
	"path/filepath"
)

// VMSettings are a VM policy's own: which image each attempt's VM boots.
// The guest's memory is the policy's MemoryLimit where it sets one (else
// the host's default size of a VM); the host's settings (accelerator,
// CPUs, the services a guest may reach) are the daemon's.
type VMSettings struct {
	// Image is the image directory (a kernel, an initramfs and a
	// read-only base disk: docs/vm.md), an absolute path on the host.
	Image string
}

// IsZero reports whether no VM setting is set.
func (v VMSettings) IsZero() bool { return v.Image == "" }

func (v VMSettings) validate() error {
	if v.Image == "" {
		return fmt.Errorf("backend %q needs an image: the directory `runner-manager vm image build` made", BackendVM)
	}
	if !filepath.IsAbs(v.Image) || filepath.Clean(v.Image) != v.Image {
		return fmt.Errorf("VM image %q: want a clean absolute path", v.Image)
	}
	return nil
}
