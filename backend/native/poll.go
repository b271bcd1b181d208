package native

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// pollExit watches (pid, start) by looking every pollEvery; rm.ErrProcessGone
// if it is not alive now.
func pollExit(pid int, start uint64, pollEvery time.Duration) (<-chan struct{}, error) {
	if !platform.Alive(pid, start) {
		return nil, rm.ErrProcessGone
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for range t.C {
			if !platform.Alive(pid, start) {
				return
			}
		}
	}()
	return done, nil
}
