//go:build windows

package datadir

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is the byte range LockFileEx locks: far beyond the pid written
// at the start of the file, which a locked range would make unreadable to
// the second daemon that wants to name the holder.
const lockOffset = 1 << 30

// tryLock takes an exclusive LockFileEx lock on f without waiting; held
// reports that another handle has it.
func tryLock(f *os.File) (held bool, err error) {
	ol := &windows.Overlapped{Offset: lockOffset}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return true, nil
	}
	return false, err
}
