package container

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// cgroupV1Memory is where the cgroup v1 memory hierarchy is mounted.
const cgroupV1Memory = "/sys/fs/cgroup/memory"

// oomWatch sees a container's cgroup v1 memory cgroup run out of memory,
// through its OOM notification eventfd: the kernel signals it when the
// cgroup hits its limit and its OOM killer is called (and again when the
// cgroup is removed, when its files no longer read). It is the launcher's
// own witness where the engine does not say: Podman on cgroup v1 reports
// OOMKilled false for a container the OOM killer ended. On cgroup v2 the
// engines read memory.events themselves and say.
type oomWatch struct {
	control *os.File // memory.oom_control
	usage   *os.File // memory.max_usage_in_bytes; nil if it cannot be read
	events  *os.File // the eventfd
	killed  atomic.Bool
	kills   atomic.Uint64 // the kill counter's last value
	peak    atomic.Uint64 // the cgroup's peak charge, as last read
	once    sync.Once
	done    chan struct{}
}

// watchOOM starts watching the memory cgroup of pid; nil when it has none
// on cgroup v1 (v2, no memory controller, no permission).
func watchOOM(pid int) *oomWatch {
	dir := memoryCgroupV1(pid)
	if dir == "" {
		return nil
	}
	control, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = control.Close()
		return nil
	}
	events := os.NewFile(uintptr(efd), "oom eventfd")
	reg := strconv.Itoa(efd) + " " + strconv.Itoa(int(control.Fd()))
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(reg), 0); err != nil {
		_ = events.Close()
		_ = control.Close()
		return nil
	}
	w := &oomWatch{control: control, events: events, done: make(chan struct{})}
	if f, err := os.Open(filepath.Join(dir, "memory.max_usage_in_bytes")); err == nil {
		w.usage = f
	}
	w.look() // an OOM kill before the registration still counts
	go w.run()
	return w
}

// run wakes at each OOM event (and at the cgroup's removal) and reads the
// kill counter.
func (w *oomWatch) run() {
	defer close(w.done)
	var b [8]byte
	for {
		if _, err := w.events.Read(b[:]); err != nil {
			return // closed
		}
		if !w.look() {
			return // the cgroup is gone
		}
		// Readable: not the removal, so the cgroup ran out of memory and
		// its OOM killer was called (the kill counter may not show it yet).
		w.killed.Store(true)
	}
}

// look reads memory.oom_control, noting an OOM kill its counter shows,
// and the cgroup's peak charge; false when it cannot be read (the cgroup
// was removed).
func (w *oomWatch) look() bool {
	buf := make([]byte, 256)
	n, err := w.control.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(buf[:n]))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			if k, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil && k > 0 {
				w.killed.Store(true)
				w.kills.Store(max(w.kills.Load(), k))
			}
		}
	}
	if w.usage != nil {
		if n, _ := w.usage.ReadAt(buf, 0); n > 0 {
			if v, err := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64); err == nil {
				w.peak.Store(max(w.peak.Load(), v))
			}
		}
	}
	return true
}

// memory is what the watch saw of the cgroup: the processes the OOM killer
// killed (at least 1 once it acted, though the counter may not show it)
// and the cgroup's peak charge (0 when unknown). Call after stop.
func (w *oomWatch) memory() (kills, peak uint64) {
	if w == nil {
		return 0, 0
	}
	kills = w.kills.Load()
	if kills == 0 && w.killed.Load() {
		kills = 1
	}
	return kills, w.peak.Load()
}

// stop looks a last time, ends the watch and reports whether the
// container ran out of memory and its OOM killer acted.
func (w *oomWatch) stop() bool {
	if w == nil {
		return false
	}
	w.once.Do(func() {
		if !w.look() {
			// The cgroup went before this last look (the engine removed
			// it as the container ended): the peak read last is an earlier
			// one, not the container's, so it is not known.
			w.peak.Store(0)
		}
		_ = w.events.Close()
		<-w.done
		_ = w.control.Close()
		if w.usage != nil {
			_ = w.usage.Close()
		}
	})
	return w.killed.Load()
}

// memoryCgroupV1 is the directory of pid's cgroup v1 memory cgroup, "" if
// it has none.
func memoryCgroupV1(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "memory" {
				dir := filepath.Join(cgroupV1Memory, parts[2])
				if _, err := os.Stat(filepath.Join(dir, "memory.oom_control")); err == nil {
					return dir
				}
				return ""
			}
		}
	}
	return ""
}
