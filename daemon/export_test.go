package daemon

import (
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// WithVMFloor wraps m as the daemon does for its VM policies, with
// [vm] memory defaultMiB.
func WithVMFloor(m rm.Meters, st store.Store, defaultMiB int) rm.Meters {
	return (&Daemon{st: st, cfg: Config{VM: VMConfig{MemoryMiB: defaultMiB}}}).withVMFloor(m)
}
