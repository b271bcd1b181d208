//go:build windows

package native

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// reapUncontained finds nothing on Windows: without a job object holding
// the runner's tree, what a job started is not known once the runner
// exited (see newProcessGroup).
func reapUncontained(a rm.AttemptID, runner procIdent, grace time.Duration) ([]platform.Leftover, error) {
	return nil, nil
}
