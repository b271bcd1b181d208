package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
)

// clockTick is the unit of the time fields of /proc/<pid>/stat. Linux
// reports them in USER_HZ, which is 100 on every architecture Go runs on
// (reading sysconf(_SC_CLK_TCK) would need cgo for the same answer).
const clockTick = 10 * time.Millisecond

// ProcScanner reads the process table straight from procfs: one listing of
// the procfs root and one read of /proc/<pid>/stat per process per look,
// which is the floor of what any reader must do. It reuses its buffers
// between looks, so sampling a steady table allocates only the result map.
// A zero ProcScanner reads /proc. It is safe for concurrent use (looks are
// serialised). It exists on Linux only; SampleTrees is the portable call.
type ProcScanner struct {
	// Root is the procfs mount to read; "" means /proc. Tests point it at a
	// fixture tree.
	Root string

	mu      sync.Mutex
	dirents []byte // getdents buffer
	stat    []byte // one stat file
	path    []byte // "<pid>/stat\x00"
	entries []procEntry
	index   treeIndex
}

var defaultScanner ProcScanner

// SampleTrees returns the memory (resident set) and CPU time of each root's
// whole process tree — the root and all its descendants — from one look at
// the process table. A root that does not exist is absent from the map (an
// exited root not yet reaped, a zombie, is still there, using no memory); a
// process that vanishes during the look is skipped. The map is nil only when
// the process table itself could not be listed: then nothing is known and
// no root should be taken for gone.
//
// RSS is the sum over the tree's processes, so pages shared between them are
// counted once per process (as ps and top do). CPU time is that of the live
// processes: a child that exited takes its time out of the total.
func SampleTrees(pids []int) map[int]TreeUsage { return defaultScanner.Sample(pids) }

// Sample is SampleTrees over s.Root.
func (s *ProcScanner) Sample(pids []int) map[int]TreeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.scan(); err != nil {
		return nil
	}
	return s.index.sample(s.entries, pids)
}

func (s *ProcScanner) root() string {
	if s.Root == "" {
		return "/proc"
	}
	return s.Root
}

// scan fills s.entries with one look at the table.
func (s *ProcScanner) scan() error {
	if s.dirents == nil {
		s.dirents = make([]byte, 64<<10)
		s.stat = make([]byte, 4<<10)
		s.path = make([]byte, 0, 32)
	}
	s.entries = s.entries[:0]
	dir, err := unix.Open(s.root(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("list processes: open %s: %w", s.root(), err)
	}
	defer unix.Close(dir)
	for {
		n, err := unix.Getdents(dir, s.dirents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("list processes: read %s: %w", s.root(), err)
		}
		if n <= 0 {
			return nil
		}
		for buf := s.dirents[:n]; len(buf) > 0; {
			// struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[16])))
			if reclen <= 19 || reclen > len(buf) {
				break
			}
			name := buf[19:reclen]
			if end := bytes.IndexByte(name, 0); end >= 0 {
				name = name[:end]
			}
			buf = buf[reclen:]
			if pid, ok := parsePID(name); ok {
				s.read(dir, pid, name)
			}
		}
	}
}

// read reads one process's stat file relative to the open procfs root and
// appends its entry; a process that vanished or a malformed file is skipped.
func (s *ProcScanner) read(dir, pid int, name []byte) {
	s.path = append(append(append(s.path[:0], name...), "/stat"...), 0)
	fd, err := openat(dir, s.path)
	if err != nil {
		return
	}
	// procfs hands over the whole stat line in one read when the buffer
	// holds it; read on only if it filled the buffer.
	n := 0
	for n < len(s.stat) {
		m, err := unix.Read(fd, s.stat[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		n += m
		if n < len(s.stat) {
			break
		}
	}
	unix.Close(fd)
	st, ok := parseStat(s.stat[:n])
	if !ok {
		return
	}
	s.entries = append(s.entries, procEntry{
		pid:  pid,
		ppid: st.ppid,
		rss:  st.rssPages * uint64(pageSize),
		cpu:  time.Duration(st.utime+st.stime) * clockTick,
	})
}

var pageSize = os.Getpagesize()

// openat opens the NUL-terminated path relative to dir without the
// allocation unix.Openat makes to terminate a Go string.
func openat(dir int, path []byte) (int, error) {
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dir),
			uintptr(unsafe.Pointer(&path[0])), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// parsePID parses a procfs entry name made only of digits.
func parsePID(name []byte) (int, bool) {
	if len(name) == 0 || len(name) > 9 {
		return 0, false
	}
	pid := 0
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, pid > 0
}

// procStat is what we use of /proc/<pid>/stat.
type procStat struct {
	state        byte
	ppid         int
	utime, stime uint64 // clock ticks
	start        uint64 // clock ticks since boot
	rssPages     uint64
}

// parseStat parses a /proc/<pid>/stat line (proc(5)). The command name sits
// between the first '(' and the last ')' and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (procStat, bool) {
	var st procStat
	rp := bytes.LastIndexByte(b, ')')
	if rp < 0 || bytes.IndexByte(b[:rp], '(') < 0 {
		return st, false
	}
	b = b[rp+1:]
	// Fields after the name, counted from 0: state(0) ppid(1) … utime(11)
	// stime(12) … starttime(19) vsize(20) rss(21).
	for field := 0; field <= 21; field++ {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		end := 0
		for end < len(b) && b[end] != ' ' && b[end] != '\n' {
			end++
		}
		tok := b[:end]
		b = b[end:]
		if len(tok) == 0 {
			return st, false
		}
		switch field {
		case 0:
			st.state = tok[0]
		case 1:
			v, ok := parseUint(tok)
			if !ok {
				return st, false
			}
			st.ppid = int(v)
		case 11, 12, 19, 21:
			v, ok := parseUint(tok)
			if !ok {
				if field == 21 && tok[0] == '-' { // rss is a signed long
					v = 0
				} else {
					return st, false
				}
			}
			switch field {
			case 11:
				st.utime = v
			case 12:
				st.stime = v
			case 19:
				st.start = v
			case 21:
				st.rssPages = v
			}
		}
	}
	return st, true
}

// parseUint parses decimal digits without allocating.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// readStat reads and parses one process's stat file, mapping "no such
// process" to rm.ErrProcessGone.
func (s *ProcScanner) readStat(pid int) (procStat, error) {
	if pid <= 0 {
		return procStat{}, fmt.Errorf("process %d: %w", pid, rm.ErrProcessGone)
	}
	path := filepath.Join(s.root(), strconv.Itoa(pid), "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return procStat{}, fmt.Errorf("process %d: %w", pid, rm.ErrProcessGone)
		}
		return procStat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	st, ok := parseStat(b)
	if !ok {
		return procStat{}, fmt.Errorf("process %d: cannot parse %s", pid, path)
	}
	return st, nil
}

// StartTime returns the start stamp of process pid: on Linux its start time
// in clock ticks since boot (starttime of /proc/<pid>/stat), elsewhere its
// creation time in Unix milliseconds. With the pid it names one process for
// good: a pid reused by a later process carries another stamp. A process
// that exited but was not yet reaped (a zombie) still has its stamp. Returns
// an error wrapping rm.ErrProcessGone when there is no such process.
func StartTime(pid int) (uint64, error) { return defaultScanner.StartTime(pid) }

// StartTime is the package's StartTime over s.Root.
func (s *ProcScanner) StartTime(pid int) (uint64, error) {
	st, err := s.readStat(pid)
	if err != nil {
		return 0, err
	}
	return st.start, nil
}

// Alive reports whether the process named by (pid, start) still runs: the
// pid exists, carries that start stamp (see StartTime), and is not a zombie
// (exited, waiting to be reaped).
func Alive(pid int, start uint64) bool { return defaultScanner.Alive(pid, start) }

// Alive is the package's Alive over s.Root.
func (s *ProcScanner) Alive(pid int, start uint64) bool {
	st, err := s.readStat(pid)
	return err == nil && st.start == start && st.state != 'Z' && st.state != 'X' && st.state != 'x'
}
