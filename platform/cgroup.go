package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"time"
)

// Control groups, one per native attempt (Linux).
//
// A runner's job can start processes that leave the runner's process tree
// and process group: `setsid cmd &`, a double fork, a daemon. The tree walk
// of the process table no longer sees them (their memory escapes the
// meters) and a signal to the process group misses them (they outlive the
// attempt, holding memory, ports and files into the next job). A control
// group holds every process started in it whatever it does to its session
// or parents, so on Linux each native attempt's runner starts inside a
// cgroup of its own, <root>/runner-manager/<scope>/<attempt id>, where
// <root> is the manager's own cgroup in each hierarchy (the delegated
// subtree under systemd; see Cgroups) and <scope> names the data directory
// (CgroupScope), so two managers of one host never share a group. The
// attempt is metered from the group's files, O(attempts) per pass instead
// of a walk of every process, emptied when it ends (every process left in
// it stopped) and removed.

// CgroupScope names the cgroups of the attempts of one data directory: the
// first 12 hex digits of the SHA-256 of its absolute path.
func CgroupScope(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return hex.EncodeToString(sum[:6])
}

// Leftover is a process found in an attempt when it ended, and stopped.
type Leftover struct {
	PID     int
	Command string // its command name (comm), "" if it was gone
}

// ErrNoMemoryController: the attempt's cgroup has no memory controller, so
// no memory limit can be set (a cgroup v2 subtree without memory
// delegated, or no cgroup at all).
var ErrNoMemoryController = errors.New("no memory controller for the attempt's cgroup")

// DefaultLeftoverGrace is how long the processes an attempt left behind
// get between SIGTERM and SIGKILL when it ends.
const DefaultLeftoverGrace = 3 * time.Second

// cgroupDirName is the directory under the manager's own cgroup that holds
// every scope's groups.
const cgroupDirName = "runner-manager"
