// Package backoff owns the capped exponential backoff every retry of the
// manager waits by (the loop driver's, a watch's reconnect, the retries
// GitHub's own clients make that ours mirror, a fleet lease's and the
// heartbeat's, a store's contention), so that the formula and its jitter
// are written once. docs/architecture.md, "Who waits", lists the owners.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is a capped exponential backoff: the n-th wait (n from 0) is at
// most Base·2^n, and never more than Cap.
type Policy struct {
	Base time.Duration
	Cap  time.Duration
}

// Ceiling is the n-th wait (n from 0) before jitter: Base·2^n, at most Cap.
func (p Policy) Ceiling(n int) time.Duration {
	d := p.Base
	for i := 0; i < n && d < p.Cap; i++ {
		if d > p.Cap/2 {
			d = p.Cap // doubling would pass Cap (or overflow)
			break
		}
		d *= 2
	}
	return min(d, p.Cap)
}

// Wait is the n-th wait with equal jitter: half the ceiling plus a random
// part of the other half. Tries that wait for a service to come back never
// come sooner than half the ceiling, and many clients never in lockstep.
func (p Policy) Wait(n int) time.Duration { return p.At(n, rand.Float64()) }

// At is Wait with its random number r, in [0, 1), given: for tests that
// pin the waits.
func (p Policy) At(n int, r float64) time.Duration {
	d := p.Ceiling(n)
	half := d / 2
	return half + time.Duration(float64(d-half)*r)
}

// Spread is the n-th wait with full jitter: anywhere below the ceiling.
// For contenders (two writers of one row) that must fall apart, not wait
// for a third party.
func (p Policy) Spread(n int) time.Duration {
	d := p.Ceiling(n)
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}
