package datadir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	rm "github.com/runner-manager/runner-manager"
)

// ErrLocked: another process holds the data directory's lock.
var ErrLocked = rm.NewError(rm.ClassConflict, "the data directory is locked")

// LockedError says which process holds a data directory's lock.
type LockedError struct {
	Path string
	// PID is the holder's, as it wrote it in the file; 0 when unreadable.
	PID int
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("another runner-manager daemon is running on this data directory: %s holds %s; stop it first (`runner-manager status` shows it)", who, e.Path)
}

// Is makes a LockedError an ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is an exclusive lock on the data directory's manager.lock, held from
// Dir.Lock to Close: an advisory lock of the OS (flock on Unix, LockFileEx on
// Windows), released by the OS when the holder dies, so a crash never leaves
// it stale. The holder's pid is written in the file for the error a second
// daemon prints.
type Lock struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// Lock takes the data directory's lock, or returns a *LockedError
// (errors.Is ErrLocked) naming the process that holds it. The directory
// must exist.
func (d Dir) Lock() (*Lock, error) {
	path := d.LockFile()
	f, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	return &Lock{path: path, f: f}, nil
}

// lockFile opens path (0600), locks it and writes this process's pid in it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the lock %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if held {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Path: path, PID: pid}
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the lock %s: %w", path, err)
	}
	return f, nil
}

func readPID(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Check makes sure the lock still guards the data directory: a lock file
// deleted (with the data directory, say) guards nothing, since a second
// daemon would create and lock a new one. Check takes the lock again on a
// new file then, and returns a *LockedError if another process got there
// first. The daemon calls it periodically.
func (l *Lock) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("the data directory lock is closed")
	}
	if sameFile(l.f, l.path) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("re-create the data directory: %w", err)
	}
	f, err := lockFile(l.path)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = f
	return nil
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// Close releases the lock. The file stays: removing it would race a daemon
// that just opened it.
func (l *Lock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}
