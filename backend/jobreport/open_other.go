//go:build !unix

package jobreport

import "os"

// openJobFlags: the hooks are Unix shell scripts; elsewhere there is no
// record to read.
const openJobFlags = os.O_RDONLY

// openNoFollow refuses a symlink in place of a file the manager writes.
const openNoFollow = 0

// openNonBlock opens a FIFO put in place of a file without waiting.
const openNonBlock = 0
