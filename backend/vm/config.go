package vm

import (
	"net"

	"github.com/runner-manager/runner-manager/configfile"
)

// CheckConfig checks the file's [vm] table by this backend's rules: its
// accelerators and networks, a guest of at least MinMemoryMiB, 1 to 64
// CPUs, forwards written HOST:PORT (Settings.Validate parses them fully
// when the daemon builds the launcher).
func (Kind) CheckConfig(c *configfile.File) error {
	switch Accel(c.VM.Accel) {
	case "", AccelKVM, AccelTCG:
	default:
		return c.ErrAt("vm.accel", "%q is not kvm or tcg", c.VM.Accel)
	}
	switch Network(c.VM.Network) {
	case "", NetworkRestricted, NetworkOpen:
	default:
		return c.ErrAt("vm.network", "%q is not restricted or open", c.VM.Network)
	}
	if m := c.VM.Memory; m != 0 && m < MinMemoryMiB<<20 {
		return c.ErrAt("vm.memory", "%s is below 128MiB, the least a guest boots in", m)
	}
	if c.VM.CPUs < 0 || c.VM.CPUs > 64 {
		return c.ErrAt("vm.cpus", "%d is not between 1 and 64", c.VM.CPUs)
	}
	if d := c.VM.SlotDisk; d != 0 && d < MinSlotDiskBytes {
		return c.ErrAt("vm.slot_disk", "%s is below 256MiB, the least a slot's file system needs", d)
	}
	for _, f := range c.VM.Forward {
		if _, _, err := net.SplitHostPort(f); err != nil {
			return c.ErrAt("vm.forward", "%q is not HOST:PORT (for example \"proxy.corp:3128\")", f)
		}
	}
	return nil
}
