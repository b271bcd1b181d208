package container

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/platform"
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

// pidExit returns a channel closed when the process (pid, start) exits,
// seen through a pidfd the moment it happens; nil when it cannot be
// watched (then the engine's wait alone tells). ctx ends the watch.
func pidExit(ctx context.Context, pid int, start uint64) <-chan struct{} {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	// Opened first, checked second: the pidfd is of that very process.
	if !platform.Alive(pid, start) {
		_ = unix.Close(fd)
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer unix.Close(fd)
		for ctx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 500)
			if errors.Is(err, unix.EINTR) || (err == nil && n == 0) {
				continue
			}
			if err == nil {
				close(done)
			}
			return
		}
	}()
	return done
}
