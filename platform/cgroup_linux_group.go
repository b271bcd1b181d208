//go:build linux

package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
)

// Cgroup is one attempt's group, in every hierarchy its Cgroups uses.
type Cgroup struct {
	c       *Cgroups
	attempt rm.AttemptID
	dirs    []string // every directory of the group
	v2      string   // its unified-hierarchy directory ("" none)
	procs   string   // the cgroup.procs that says who is in it
	// tasks are the v1 tasks files a launching thread joins, with the
	// hierarchies they are in.
	tasks []string
	hier  []v1Hierarchy
	mem   memFiles
	cpu   string // cpuacct.usage (v1) or cpu.stat (v2); "" none
	cpuV2 bool

	// Usage's open descriptors (-1: none), opened at its first call and
	// closed when the group is removed or forgotten.
	fdMu          sync.RWMutex
	fdOnce        sync.Once
	cpuFD, statFD int
	fdErr         error
	fdClosed      bool
}

// memFiles are the group's memory controller files ("" none).
type memFiles struct {
	v2                                 bool
	current, stat, peak, events, limit string
	swapLimit                          string
	anonKey, fileKey                   []byte // memory.stat's keys of anonymous and file pages
	inactiveKey                        []byte // memory.stat's key of inactive file pages
	eventsKey                          []byte // the OOM kill counter's key
	noLimitAbove                       uint64 // v1's "no limit" is a huge number
}

// layout names the files of attempt a's group; it touches nothing.
func (c *Cgroups) layout(a rm.AttemptID) *Cgroup {
	g := &Cgroup{c: c, attempt: a}
	name := a.String()
	if c.v2 != "" {
		g.v2 = filepath.Join(c.v2, name)
		g.dirs = append(g.dirs, g.v2)
		g.procs = filepath.Join(g.v2, "cgroup.procs")
	}
	for _, h := range c.v1 {
		d := filepath.Join(h.scope, name)
		g.dirs = append(g.dirs, d)
		g.tasks = append(g.tasks, filepath.Join(d, "tasks"))
		g.hier = append(g.hier, h)
		if g.procs == "" {
			g.procs = filepath.Join(d, "cgroup.procs")
		}
	}
	if c.hasV2("memory") {
		d := g.v2
		g.mem = memFiles{v2: true, current: filepath.Join(d, "memory.current"), stat: filepath.Join(d, "memory.stat"),
			peak: filepath.Join(d, "memory.peak"), events: filepath.Join(d, "memory.events"),
			limit: filepath.Join(d, "memory.max"), swapLimit: filepath.Join(d, "memory.swap.max"),
			anonKey: []byte("anon "), fileKey: []byte("file "),
			inactiveKey: []byte("inactive_file "), eventsKey: []byte("oom_kill ")}
	} else if h, ok := c.v1With("memory"); ok {
		d := filepath.Join(h.scope, name)
		g.mem = memFiles{current: filepath.Join(d, "memory.usage_in_bytes"), stat: filepath.Join(d, "memory.stat"),
			peak: filepath.Join(d, "memory.max_usage_in_bytes"), events: filepath.Join(d, "memory.oom_control"),
			limit: filepath.Join(d, "memory.limit_in_bytes"), swapLimit: filepath.Join(d, "memory.memsw.limit_in_bytes"),
			anonKey: []byte("total_rss "), fileKey: []byte("total_cache "),
			inactiveKey: []byte("total_inactive_file "), eventsKey: []byte("oom_kill "), noLimitAbove: 1 << 62}
	}
	if h, ok := c.v1With("cpuacct"); ok {
		g.cpu = filepath.Join(h.scope, name, "cpuacct.usage")
	} else if g.v2 != "" {
		g.cpu, g.cpuV2 = filepath.Join(g.v2, "cpu.stat"), true
	}
	return g
}

// Attempt is the attempt the group belongs to.
func (g *Cgroup) Attempt() rm.AttemptID { return g.attempt }

// readBufs are the buffers of the group files' reads.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// Usage reads what the group uses now: on a group with a memory
// controller two files (memory.stat, and cpuacct.usage or cpu.stat), each
// one pread(2) of a descriptor the group keeps open; no walk of the
// process table. Without a memory controller the members' stat files are
// read too (O(members)).
func (g *Cgroup) Usage() (rm.GroupUsage, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	g.fdMu.RLock()
	defer g.fdMu.RUnlock()
	if err := g.openFiles(); err != nil {
		return rm.GroupUsage{}, g.readErr(err)
	}
	var u rm.GroupUsage
	if g.cpuFD >= 0 {
		b, err := preadAll(g.cpuFD, buf)
		if err != nil {
			return rm.GroupUsage{}, g.readErr(err)
		}
		if g.cpuV2 {
			usec, _ := statValue(b, []byte("usage_usec "))
			u.CPUTime = time.Duration(usec) * time.Microsecond
		} else {
			ns, _ := parseUint(bytes.TrimSpace(b))
			u.CPUTime = time.Duration(ns)
		}
	}
	if g.statFD >= 0 {
		b, err := preadAll(g.statFD, buf)
		if err != nil {
			return rm.GroupUsage{}, g.readErr(err)
		}
		anon, _ := statValue(b, g.mem.anonKey)
		file, _ := statValue(b, g.mem.fileKey)
		inactive, _ := statValue(b, g.mem.inactiveKey)
		u.MemoryBytes = anon + file - min(inactive, file)
		return u, nil
	}
	// No memory controller: the members' resident sets (and CPU time,
	// where no counter of the group has it).
	pids, err := g.members(buf)
	if err != nil {
		return rm.GroupUsage{}, g.readErr(err)
	}
	var cpu time.Duration
	for _, pid := range pids {
		st, err := defaultScanner.readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		u.MemoryBytes += st.rssPages * uint64(pageSize)
		cpu += time.Duration(st.utime+st.stime) * clockTick
	}
	if g.cpu == "" {
		u.CPUTime = cpu
	}
	return u, nil
}

// openFiles opens the descriptors Usage reads, once; fdMu held (read).
func (g *Cgroup) openFiles() error {
	g.fdOnce.Do(func() {
		g.cpuFD, g.statFD = -1, -1
		if g.cpu != "" {
			if g.cpuFD, g.fdErr = openRead(g.cpu); g.fdErr != nil {
				g.cpuFD = -1
				return
			}
		}
		if g.mem.stat != "" {
			if g.statFD, g.fdErr = openRead(g.mem.stat); g.fdErr != nil {
				g.statFD = -1
			}
		}
	})
	if g.fdClosed {
		return unix.ENOENT
	}
	return g.fdErr
}

// closeFiles closes Usage's descriptors for good.
func (g *Cgroup) closeFiles() {
	g.fdMu.Lock()
	defer g.fdMu.Unlock()
	g.fdOnce.Do(func() { g.cpuFD, g.statFD = -1, -1 })
	for _, fd := range []int{g.cpuFD, g.statFD} {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
	g.cpuFD, g.statFD, g.fdClosed = -1, -1, true
}

// preadAll reads a cgroup file from its start (the kernel makes its text
// again at each read from offset 0).
func preadAll(fd int, buf []byte) ([]byte, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

// Processes counts the processes in the group.
func (g *Cgroup) Processes() (int, error) {
	n, err := g.count()
	if err != nil {
		return 0, g.readErr(err)
	}
	return n, nil
}

func (g *Cgroup) readErr(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("cgroup of attempt %s: %w", g.attempt, rm.ErrProcessGone)
	}
	return fmt.Errorf("cgroup of attempt %s: %w", g.attempt, err)
}

// Memory reads the kernel's word on the group's memory: its peak, its
// limit and how many processes it killed for going over.
// ErrNoMemoryController when there is no memory controller.
func (g *Cgroup) Memory() (rm.GroupMemory, error) {
	if g.mem.current == "" {
		return rm.GroupMemory{}, ErrNoMemoryController
	}
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	var m rm.GroupMemory
	if b, err := readInto(g.mem.peak, buf); err == nil { // memory.peak needs Linux 5.19
		m.PeakBytes, _ = parseUint(bytes.TrimSpace(b))
	}
	b, err := readInto(g.mem.limit, buf)
	if err != nil {
		return rm.GroupMemory{}, g.readErr(err)
	}
	if v, ok := parseUint(bytes.TrimSpace(b)); ok && (g.mem.noLimitAbove == 0 || v < g.mem.noLimitAbove) {
		m.LimitBytes = v // v2's "max" does not parse: no limit
	}
	if b, err = readInto(g.mem.events, buf); err != nil {
		return rm.GroupMemory{}, g.readErr(err)
	}
	m.OOMKills, _ = statValue(b, g.mem.eventsKey)
	return m, nil
}

// SetMemoryLimit sets the group's memory limit (swap included: a group
// at its limit is not let to swap), or none for 0.
// ErrNoMemoryController when there is no memory controller.
func (g *Cgroup) SetMemoryLimit(bytes uint64) error {
	if g.mem.current == "" {
		return ErrNoMemoryController
	}
	v := strconv.FormatUint(bytes, 10)
	if g.mem.v2 {
		if bytes == 0 {
			v = "max"
		}
		if err := writeFile(g.mem.limit, v); err != nil {
			return fmt.Errorf("cgroup of attempt %s: memory limit: %w", g.attempt, err)
		}
		swap := "0"
		if bytes == 0 {
			swap = "max"
		}
		if err := writeFile(g.mem.swapLimit, swap); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cgroup of attempt %s: swap limit: %w", g.attempt, err)
		}
		return nil
	}
	if bytes == 0 {
		v = "-1"
	}
	// memory.memsw.limit_in_bytes must stay ≥ memory.limit_in_bytes: when
	// the first write is refused, the other goes first.
	err := writeFile(g.mem.limit, v)
	swapErr := writeFile(g.mem.swapLimit, v)
	if err != nil {
		err = writeFile(g.mem.limit, v)
	}
	if err != nil {
		return fmt.Errorf("cgroup of attempt %s: memory limit: %w", g.attempt, err)
	}
	if swapErr != nil && !errors.Is(swapErr, unix.ENOENT) {
		if swapErr = writeFile(g.mem.swapLimit, v); swapErr != nil {
			return fmt.Errorf("cgroup of attempt %s: swap limit: %w", g.attempt, swapErr)
		}
	}
	return nil
}

// Members lists the processes in the group.
func (g *Cgroup) Members() ([]int, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	pids, err := g.members(*bp)
	if err != nil {
		return nil, g.readErr(err)
	}
	return pids, nil
}

// members reads cgroup.procs, leaving out this process (a launching
// thread of it can be in a v1 group for a moment).
func (g *Cgroup) members(buf []byte) ([]int, error) {
	fd, err := openRead(g.procs)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	self := os.Getpid()
	var pids []int
	var carry []byte
	for {
		n, err := readFull(fd, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		chunk := append(carry, buf[:n]...)
		last := bytes.LastIndexByte(chunk, '\n')
		for line := range bytes.SplitSeq(chunk[:last+1], []byte{'\n'}) {
			if v, ok := parseUint(line); ok && int(v) != self {
				pids = append(pids, int(v))
			}
		}
		carry = append(carry[:0], chunk[last+1:]...)
	}
	if v, ok := parseUint(carry); ok && int(v) != self {
		pids = append(pids, int(v))
	}
	return pids, nil
}

// count is how many processes are in the group.
func (g *Cgroup) count() (int, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	return countLines(g.procs, *bp)
}

// readInto reads a small file whole into buf.
func readInto(path string, buf []byte) ([]byte, error) {
	fd, err := openRead(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := readFull(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func openRead(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readFull reads until buf is full or the end of the file.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// countLines counts the lines of a file of any length.
func countLines(path string, buf []byte) (int, error) {
	fd, err := openRead(path)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	lines := 0
	for {
		n, err := readFull(fd, buf)
		if err != nil {
			return 0, err
		}
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if n < len(buf) {
			return lines, nil
		}
	}
}

// statValue finds "key value" at the start of a line of a flat-keyed
// file (memory.stat, cpu.stat, memory.events).
func statValue(b, key []byte) (uint64, bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := bytes.CutPrefix(line, key); ok {
			return parseUint(bytes.TrimSpace(v))
		}
	}
	return 0, false
}

// writeFile writes one value to a cgroup file in one write(2), as the
// kernel wants it.
func writeFile(path, v string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, []byte(v))
		if err != unix.EINTR {
			return err
		}
	}
}
