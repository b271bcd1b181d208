package vm

import rm "github.com/runner-manager/runner-manager"

// PeakFloor is the least an attempt of pol may be expected to peak at
// (0 for none, and for a policy of another backend): its guest, sized by
// the limit the loop gives the launcher (rm.Policy.MemoryLimitFor, at least
// MinMemoryMiB as the launcher takes it), else defaultMiB (the host's
// Settings.MemoryMiB), plus QEMU's own (QEMUOverheadMiB): what QEMU's RSS
// can reach whatever the job. A limit drawn from peaks is the expected
// peak's own rule: a floor from it would feed on itself.
func PeakFloor(pol rm.Policy, defaultMiB int) uint64 {
	if pol.Backend != rm.BackendVM || pol.MemoryLimit == rm.MemoryLimitFromPeaks {
		return 0
	}
	guest := uint64(defaultMiB) << 20
	if limit := pol.MemoryLimitFor(0); limit != 0 {
		guest = max(limit>>20, MinMemoryMiB) << 20
	}
	return guest + QEMUOverheadMiB<<20
}
