package platform

import (
	"fmt"
	"os"
)

// Self names this process on this machine, for a lease in a shared journal:
// who holds it, and whether that holder can still be alive.
type Self struct {
	PID int
	// Start is the process's start stamp (see StartTime); 0 if unread.
	Start    uint64
	Hostname string
	// BootID changes at each boot of the machine: a holder of an older
	// boot is dead whatever its pid.
	BootID string
}

// Identify returns this process's Self.
func Identify() (Self, error) {
	name, err := os.Hostname()
	if err != nil {
		return Self{}, fmt.Errorf("read host name: %w", err)
	}
	s := Self{PID: os.Getpid(), Hostname: name}
	s.Start, _ = StartTime(s.PID)
	s.BootID, err = bootID()
	if err != nil {
		return Self{}, fmt.Errorf("read the boot id: %w", err)
	}
	return s, nil
}
