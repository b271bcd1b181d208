package meter

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// The private figures the tests check against.
const (
	AnnounceAgain       = announceAgain
	KeepAfterLastSample = keepAfterLastSample
)

// SetSampler replaces the look at the process table, and takes every
// sampled pid for alive (a synctest bubble has no real processes).
func (ms *AttemptMeters) SetSampler(sample func(pids []int) map[int]platform.TreeUsage) {
	ms.sample = sample
	ms.alive = func(int, uint64) bool { return true }
}

// AgeExited moves every "last announced" time d into the past.
func (ms *AttemptMeters) AgeExited(d time.Duration) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for a, at := range ms.exited {
		ms.exited[a] = at.Add(-d)
	}
}

// SetPeaks sets a policy's measured peaks.
func (ms *AttemptMeters) SetPeaks(p rm.PolicyID, peaks []uint64) {
	ms.peaksMu.Lock()
	defer ms.peaksMu.Unlock()
	ms.peaks.Policies[p.String()] = peaks
}
