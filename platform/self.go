package platform

import (
	"fmt"
	"os"

	rm "github.com/runner-manager/runner-manager"
)

// Identify names this process on this machine, for a lease in a shared
// journal.
func Identify() (rm.ProcessIdentity, error) {
	name, err := os.Hostname()
	if err != nil {
		return rm.ProcessIdentity{}, fmt.Errorf("read host name: %w", err)
	}
	s := rm.ProcessIdentity{PID: os.Getpid(), Hostname: name}
	s.Start, _ = StartTime(s.PID)
	s.BootID, err = bootID()
	if err != nil {
		return rm.ProcessIdentity{}, fmt.Errorf("read the boot id: %w", err)
	}
	return s, nil
}
