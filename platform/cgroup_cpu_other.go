//go:build !linux

package platform

// CPU weights of a group (Linux only).
const (
	CPUWeightDefault = 100
	CPUWeightLowest  = 1
)

// ErrNoCPUWeight: no group has a CPU weight here.
var ErrNoCPUWeight = errNoCgroups

// SetCPUWeight is Linux's only.
func (g *Cgroup) SetCPUWeight(w uint64) error { return errNoCgroups }

// CPUWeight is Linux's only.
func (g *Cgroup) CPUWeight() (uint64, error) { return 0, errNoCgroups }
