//go:build !linux

package chaos

import "errors"

// procScanWorks says whether scanProcs can see processes here.
const procScanWorks = false

// scanProcs needs /proc.
func scanProcs(*World) ([]proc, error) {
	return nil, errors.New("chaos: the runner process scan reads /proc: Linux only")
}
