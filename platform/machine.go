package platform

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Machine is this machine as the manager's core reads it: host memory and
// disk (gopsutil), CPU (/proc/stat), this process's identity and the
// runner processes under a data directory (/proc on Linux; none
// elsewhere). Make it with NewMachine; safe for concurrent use.
type Machine struct {
	cpu *HostCPU
}

var _ rm.Machine = (*Machine)(nil)

// NewMachine returns the machine this process runs on.
func NewMachine() *Machine { return &Machine{cpu: NewHostCPU()} }

// Memory implements rm.Machine (HostMemory).
func (*Machine) Memory() (total, available uint64, err error) { return HostMemory() }

// DiskFree implements rm.Machine (DiskFree).
func (*Machine) DiskFree(path string) (uint64, error) { return DiskFree(path) }

// CPUPercent implements rm.Machine (HostCPU.Percent).
func (m *Machine) CPUPercent() (float64, bool) { return m.cpu.Percent() }

// Identify implements rm.Machine (Identify).
func (*Machine) Identify() (rm.ProcessIdentity, error) { return Identify() }

// Alive implements rm.Machine (Alive).
func (*Machine) Alive(pid int, start uint64) bool { return Alive(pid, start) }

// RunnerProcesses implements rm.Machine: RunnerProcesses of /proc, kept to
// those under dir (RunnersUnder).
func (*Machine) RunnerProcesses(dir string) ([]rm.RunnerProcess, error) {
	procs, err := RunnerProcesses("")
	if err != nil {
		return nil, err
	}
	return RunnersUnder(procs, dir), nil
}

// StopRunnerProcess implements rm.Machine (StopRunnerProcess).
func (*Machine) StopRunnerProcess(p rm.RunnerProcess, grace time.Duration) error {
	return StopRunnerProcess(p, grace)
}
