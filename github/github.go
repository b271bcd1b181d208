// Package github owns everything the manager asks of GitHub: a target's
// demand (how many runners it wants, with job events), JIT runner
// configurations, runner removal and listing, and runner downloads. Its
// targets, ScaleSetTarget (scale-set mode over github.com/actions/scaleset)
// and ClassicTarget (classic mode over go-github), are the root package's
// Registrar and DemandSource over GitHub, exchanging its vocabulary
// (runners, JIT configurations, demand and job events), and share one
// transport (authentication, rate limits, retries, conditional requests).
// simulate/fakegithub is a fake GitHub for tests and the demo.
package github

import (
	"errors"
	"strconv"
)

// ErrNoQueueURL: GitHub opened a message session without a message-queue
// URL (a broker incident); it is deleted, never polled. The errors the
// targets share with any registrar or demand source (rm.ErrRunnerBusy,
// rm.ErrNotFound, rm.ErrUnauthorized, rm.ErrSessionConflict,
// rm.ErrCannotList, *rm.RateLimitError) are the root package's.
var ErrNoQueueURL = errors.New("message session without a queue URL")

// restJobID is a REST job number as a JobEvent's JobID: the number in
// decimal, "" for 0 (not told).
func restJobID(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}
