//go:build linux

package platform

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotPlaced: the process could not be started inside its group; it
// was not started at all, and the caller may start it outside.
var ErrNotPlaced = errors.New("the process could not be started inside its cgroup")

// ErrStartedOutside: the process started, but could not be moved into its
// group afterwards (Linux before 5.7 only): it runs uncontained.
var ErrStartedOutside = errors.New("the process started outside its cgroup")

// Start starts cmd inside the group, so that the process and everything
// it ever starts are members from their first instruction:
//
//   - in the unified hierarchy through clone3 with CLONE_INTO_CGROUP
//     (SysProcAttr.UseCgroupFD), on Linux 5.7 and later; before that the
//     process is moved in right after it starts (a runner's first child
//     comes seconds later, after it reached GitHub);
//   - in v1 hierarchies by forking from a thread that first joins the
//     group (a thread of its own, locked to the calling goroutine, whose
//     tasks entry moves it alone) and goes back to the manager's groups at
//     once: a child is born in its parent thread's groups.
//
// An error wrapping ErrNotPlaced means nothing was started; one wrapping
// ErrStartedOutside means cmd runs, uncontained.
func (g *Cgroup) Start(cmd *exec.Cmd) error {
	orig := cmd.SysProcAttr
	if g.v2 != "" && g.c.clone3 {
		fd, err := unix.Open(g.v2, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: open %s: %w", ErrNotPlaced, g.v2, err)
		}
		defer unix.Close(fd)
		var attr syscall.SysProcAttr
		if orig != nil {
			attr = *orig
		}
		attr.UseCgroupFD, attr.CgroupFD = true, fd
		cmd.SysProcAttr = &attr
	}
	var err error
	if len(g.tasks) > 0 {
		err = g.startFromThread(cmd)
	} else {
		err = cmd.Start()
	}
	if errors.Is(err, ErrNotPlaced) {
		cmd.SysProcAttr = orig
	}
	if err != nil {
		return err
	}
	if g.v2 != "" && !g.c.clone3 {
		if err := writeFile(filepath.Join(g.v2, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
			return fmt.Errorf("%w: %w", ErrStartedOutside, err)
		}
	}
	return nil
}

// startFromThread runs cmd.Start on a thread of its own that is in the
// group's v1 hierarchies for the fork only.
func (g *Cgroup) startFromThread(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err, back := g.forkInside(cmd)
		if back {
			runtime.UnlockOSThread()
		}
		// Else the thread could not return to the manager's groups: it
		// stays locked, and the runtime ends it with this goroutine.
		done <- err
	}()
	return <-done
}

// forkInside moves the calling thread into the group's v1 hierarchies,
// starts cmd and moves the thread back; back says it is back.
func (g *Cgroup) forkInside(cmd *exec.Cmd) (err error, back bool) {
	tid := unix.Gettid()
	home, err := threadGroups(g.hier)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotPlaced, err), true
	}
	for i, t := range g.tasks {
		if err := writeFile(t, strconv.Itoa(tid)); err != nil {
			return fmt.Errorf("%w: join %s: %w", ErrNotPlaced, t, err), returnThread(tid, home[:i])
		}
	}
	err = cmd.Start()
	return err, returnThread(tid, home)
}

// returnThread moves thread tid back into the given directories.
func returnThread(tid int, dirs []string) bool {
	ok := true
	for _, d := range dirs {
		if writeFile(filepath.Join(d, "tasks"), strconv.Itoa(tid)) != nil {
			ok = false
		}
	}
	return ok
}

// threadGroups returns the calling thread's directory in each of hs.
func threadGroups(hs []v1Hierarchy) ([]string, error) {
	own, err := ownCgroups("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(hs))
	for i, h := range hs {
		path, ok := ownPathFor(own, h.mountCtl)
		if !ok {
			return nil, fmt.Errorf("this thread is in no %s cgroup", strings.Join(h.mountCtl, ","))
		}
		d, ok := inMount(cgroupMount{point: h.mount, root: h.root}, path)
		if !ok {
			return nil, fmt.Errorf("this thread's %s cgroup %s is outside the mount %s", strings.Join(h.mountCtl, ","), path, h.mount)
		}
		dirs[i] = d
	}
	return dirs, nil
}

// ownPathFor finds the path of the hierarchy with exactly the controllers
// ctl in a parsed /proc/<pid>/cgroup.
func ownPathFor(own map[string]string, ctl []string) (string, bool) {
	for key, path := range own {
		if key == "" {
			continue
		}
		have := strings.Split(key, ",")
		if len(have) == len(ctl) && !slices.ContainsFunc(ctl, func(c string) bool { return !slices.Contains(have, c) }) {
			return path, true
		}
	}
	return "", false
}
