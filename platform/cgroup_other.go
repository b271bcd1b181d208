//go:build !linux

package platform

import (
	"errors"
	"os/exec"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// errNoCgroups: control groups are Linux's.
var errNoCgroups = errors.New("cgroups: only Linux has control groups")

// Cgroup.Start's errors (cgroup_linux_start.go): no group to start in.
var (
	ErrNotPlaced      = errNoCgroups
	ErrStartedOutside = errNoCgroups
)

// Cgroups makes and finds the cgroups of one scope's attempts: on Linux
// only. Here OpenCgroups always fails, and attempts run uncontained (see
// the package's Linux documentation for what a group gives).
type Cgroups struct{}

// Cgroup is one attempt's group (Linux only).
type Cgroup struct{}

// OpenCgroups fails off Linux: there are no control groups.
func OpenCgroups(scope string) (*Cgroups, error) { return nil, errNoCgroups }

// String says what the groups use.
func (c *Cgroups) String() string { return "" }

// Limits lists what the host did not allow.
func (c *Cgroups) Limits() []string { return nil }

// HasMemoryController reports whether the groups have a memory controller.
func (c *Cgroups) HasMemoryController() bool { return false }

// List returns the attempts that have a group.
func (c *Cgroups) List() ([]rm.AttemptID, error) { return nil, errNoCgroups }

// Create makes the attempt's group.
func (c *Cgroups) Create(a rm.AttemptID) (*Cgroup, error) { return nil, errNoCgroups }

// Find returns the attempt's group if it exists.
func (c *Cgroups) Find(a rm.AttemptID) (*Cgroup, bool) { return nil, false }

// Close removes the empty groups.
func (c *Cgroups) Close() error { return nil }

// Attempt is the attempt the group belongs to.
func (g *Cgroup) Attempt() rm.AttemptID { return rm.AttemptID{} }

// Start starts cmd inside the group.
func (g *Cgroup) Start(cmd *exec.Cmd) error { return errNoCgroups }

// Usage reads what the group uses now.
func (g *Cgroup) Usage() (rm.GroupUsage, error) { return rm.GroupUsage{}, errNoCgroups }

// Memory reads the kernel's word on the group's memory.
func (g *Cgroup) Memory() (rm.GroupMemory, error) { return rm.GroupMemory{}, ErrNoMemoryController }

// SetMemoryLimit sets the group's memory limit.
func (g *Cgroup) SetMemoryLimit(bytes uint64) error { return ErrNoMemoryController }

// Processes counts the processes in the group.
func (g *Cgroup) Processes() (int, error) { return 0, errNoCgroups }

// Members lists the processes in the group.
func (g *Cgroup) Members() ([]int, error) { return nil, errNoCgroups }

// Empty stops every process in the group.
func (g *Cgroup) Empty(grace time.Duration) ([]Leftover, error) { return nil, nil }

// Remove removes the group.
func (g *Cgroup) Remove() error { return nil }
