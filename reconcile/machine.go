package reconcile

import (
	"errors"
	"fmt"
	"os"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// noMachine is the machine of a supervisor given none: it tells nothing
// but this process's pid and host name.
type noMachine struct{}

var _ rm.Machine = noMachine{}

var errNoMachine = fmt.Errorf("no machine given: %w", errors.ErrUnsupported)

func (noMachine) Memory() (uint64, uint64, error) { return 0, 0, errNoMachine }
func (noMachine) DiskFree(string) (uint64, error) { return 0, errNoMachine }
func (noMachine) CPUPercent() (float64, bool)     { return 0, false }
func (noMachine) Alive(int, uint64) bool          { return false }
func (noMachine) RunnerProcesses(string) ([]rm.RunnerProcess, error) {
	return nil, errors.ErrUnsupported
}

func (noMachine) StopRunnerProcess(rm.RunnerProcess, time.Duration) error {
	return errors.ErrUnsupported
}

// Identify names this process without a start stamp or a boot id: a lease
// it holds is judged by its expiry alone.
func (noMachine) Identify() (rm.ProcessIdentity, error) {
	name, err := os.Hostname()
	if err != nil {
		return rm.ProcessIdentity{}, err
	}
	return rm.ProcessIdentity{PID: os.Getpid(), Hostname: name}, nil
}
