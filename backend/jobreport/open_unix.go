//go:build unix

package jobreport

import "syscall"

// openJobFlags open the started hook's record without following a
// symlink, and without blocking on a FIFO put in its place.
const openJobFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// openNoFollow refuses a symlink in place of a file the manager writes.
const openNoFollow = syscall.O_NOFOLLOW

// openNonBlock opens a FIFO put in place of a file without waiting.
const openNonBlock = syscall.O_NONBLOCK
