package runnermanager

import (
	"fmt"
	"path/filepath"
)

// VMSettings are a VM policy's own: which image each attempt's VM boots
// and which host services its guest may reach beyond the host's own list.
// The guest's memory is the policy's MemoryLimit where it sets one (else
// the host's default size of a VM); the host's settings (accelerator,
// CPUs, the services every guest may reach) are the daemon's.
type VMSettings struct {
	// Image is the image directory (a kernel, an initramfs and a
	// read-only base disk: docs/vm.md), an absolute path on the host.
	Image string
	// Forward are host services ("host:port", see ParseForward) this
	// policy's guests reach besides the host's [vm] forward and their
	// runner's own GitHub services: a guest reaches nothing else, so a
	// policy opens only what its jobs need (a cache, a registry).
	Forward []string
}

// IsZero reports whether no VM setting is set.
func (v VMSettings) IsZero() bool { return v.Image == "" && len(v.Forward) == 0 }

func (v VMSettings) validate() error {
	if v.Image == "" {
		return fmt.Errorf("backend %q needs an image: the directory `runner-manager vm image build` made", BackendVM)
	}
	if !filepath.IsAbs(v.Image) || filepath.Clean(v.Image) != v.Image {
		return fmt.Errorf("VM image %q: want a clean absolute path", v.Image)
	}
	for _, f := range v.Forward {
		if _, _, _, err := ParseForward(f); err != nil {
			return fmt.Errorf("VM %w", err)
		}
	}
	return nil
}
