//go:build linux

package platform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"golang.org/x/sys/unix"
)

// killWait is how long Empty keeps killing after the grace before it
// gives up on a group that will not empty.
const killWait = 10 * time.Second

// emptyPoll is how often Empty looks whether the group emptied.
const emptyPoll = 10 * time.Millisecond

// Empty stops every process in the group: SIGTERM to each, up to grace
// for them to exit, then SIGKILL to whatever is left (in one write to
// cgroup.kill where the kernel has it, Linux 5.14; else to each member)
// until the group is empty, killing again what was forked meanwhile. It
// returns the processes found at the start, with their command names.
// An error says the group did not empty within 10 s of SIGKILL.
func (g *Cgroup) Empty(grace time.Duration) ([]Leftover, error) {
	pids, err := g.Members()
	if errors.Is(err, rm.ErrProcessGone) {
		return nil, nil // no group, nobody in it
	}
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, nil
	}
	left := describeProcesses(pids)
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGTERM)
	}
	if g.waitEmpty(grace) {
		return left, nil
	}
	deadline := time.Now().Add(killWait)
	for {
		g.killAll()
		if g.waitEmpty(5 * emptyPoll) {
			return left, nil
		}
		if time.Now().After(deadline) {
			n, _ := g.count()
			return left, fmt.Errorf("cgroup of attempt %s: %d processes still in it %s after SIGKILL", g.attempt, n, killWait)
		}
	}
}

// killAll sends SIGKILL to every member.
func (g *Cgroup) killAll() {
	if g.v2 != "" {
		if err := writeFile(filepath.Join(g.v2, "cgroup.kill"), "1"); err == nil {
			return
		}
	}
	pids, _ := g.Members()
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// waitEmpty waits up to d for the group to hold no process.
func (g *Cgroup) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if n, err := g.count(); err != nil || n == 0 {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(emptyPoll)
	}
}

// Remove removes the group's directories; the group must be empty (a
// process that just died can hold it for a moment: Remove retries for up
// to a second). A group already gone is not an error.
func (g *Cgroup) Remove() error {
	g.closeFiles()
	deadline := time.Now().Add(time.Second)
	for {
		err := g.removeDirs()
		if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if err == nil {
				g.c.forget(g.attempt)
				g.c.dropScopes() // if this was the scope's last group
			}
			return err
		}
		time.Sleep(emptyPoll)
	}
}

func (g *Cgroup) removeDirs() error {
	var errs []error
	for _, d := range g.dirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// describeProcesses names each process by its command (comm).
func describeProcesses(pids []int) []Leftover {
	out := make([]Leftover, len(pids))
	for i, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		out[i] = Leftover{PID: pid, Command: strings.TrimSpace(string(b))}
	}
	return out
}
