package daemon

import (
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// WithVMFloor wraps m as the daemon does for its VM policies, with
// [vm] memory defaultMiB.
func WithVMFloor(m reconcile.Meters, st store.Store, defaultMiB int) reconcile.Meters {
	return (&Daemon{st: st, cfg: Config{VM: VMConfig{MemoryMiB: defaultMiB}}}).withVMFloor(m)
}
