//go:build !unix

package jobreport

import "os"

// openJobFlags: the hooks are Unix shell scripts; elsewhere there is no
// record to read.
const openJobFlags = os.O_RDONLY
