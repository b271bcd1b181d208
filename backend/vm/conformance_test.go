package vm_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/launchertest"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
)

// The VM launcher passes the launcher suite with QEMU's software CPU
// (skipped without QEMU and a kernel, failed under
// RUNNER_MANAGER_REQUIRE_VM=1). A VM boots in tens of seconds there, so
// it runs the subtests whose answer is the VM's own: the launch (the exit
// code and the job's trace from the guest's console), the metering
// (QEMU's cgroup, the guest's memory in QEMU's process) and the restart
// (QEMU adopted by pid and start stamp, an orphan VM swept). The others
// check what the launcher shares with every backend, and its own tests
// check its memory limit (the guest's size).
func TestConformance(t *testing.T) {
	vmtest.Kernel(t)
	launchertest.Run(t, launchertest.Harness{
		New: func(t *testing.T, dataDir string) rm.Launcher {
			l, err := vm.NewLauncher(dataDir, vm.Settings{MemoryMiB: 256, CPUs: 1, Accel: vm.AccelTCG},
				vm.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		Prepare: func(t *testing.T) rm.LaunchSpec {
			return rm.LaunchSpec{Policy: rm.Policy{Name: "conformance", Backend: rm.BackendVM,
				VM: rm.VMSettings{Image: vmtest.FakeRunnerImage(t).Dir}}}
		},
		Remains: func(_ *testing.T, l rm.Launcher, a rm.AttemptID) []string {
			if dir := l.(*vm.Launcher).Dir(a); exists(dir) {
				return []string{dir}
			}
			return nil
		},
		Boot: 3 * time.Minute,
		Only: []string{launchertest.Launch, launchertest.Metering, launchertest.Restart},
	})
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
