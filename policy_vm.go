package runnermanager

// VMSettings are a VM policy's own: which image each attempt's VM boots
// and which host services its guest may reach beyond the host's own list.
// The guest's memory is the policy's MemoryLimit where it sets one (else
// the host's default size of a VM); the host's settings (accelerator,
// CPUs, the services every guest may reach) are the daemon's. The journal
// keeps them in columns of their own; their rules are the vm backend's
// (its BackendKind).
type VMSettings struct {
	// Image is the image directory (a kernel, an initramfs and a
	// read-only base disk: docs/vm.md), an absolute path on the host.
	Image string
	// Forward are host services ("host:port", as the vm backend parses
	// them) this policy's guests reach besides the host's [vm] forward
	// and their runner's own GitHub services: a guest reaches nothing
	// else, so a policy opens only what its jobs need (a cache, a
	// registry).
	Forward []string
}

// IsZero reports whether no VM setting is set.
func (v VMSettings) IsZero() bool { return v.Image == "" && len(v.Forward) == 0 }
