package container

import (
	"os"
	"strconv"
	"strings"
)

// hostPID reports whether pid, as the engine reported it for the container
// id, is that container's process on this host: its cgroup names the
// container (every engine's cgroup layout does: /docker/<id>,
// docker-<id>.scope, libpod-<id>, …). An engine in a VM or on another
// machine reports pids of its own kernel, which are not this host's.
func hostPID(pid int, id string) bool {
	if pid <= 0 || id == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err == nil && strings.Contains(string(b), id)
}
