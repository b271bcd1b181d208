package reconcile

import (
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// What a loop measures to size its spares (spares.go): job ends, job
// durations, boots and idle runners' memory.

// jobEnded notes a job's end (its runner's exit) for the rate.
func (s *spareState) jobEnded(at time.Time) {
	s.ends = append(s.ends, at)
	if over := len(s.ends) - maxQueuedEvents; over > 0 {
		s.ends = slices.Delete(s.ends, 0, over)
	}
}

// rate is the jobs ending per second over the last spareRateWindow.
func (s *spareState) rate(now time.Time) float64 {
	s.ends = slices.DeleteFunc(s.ends, func(t time.Time) bool { return now.Sub(t) > spareRateWindow })
	if len(s.ends) == 0 {
		return 0
	}
	oldest := slices.MinFunc(s.ends, func(a, b time.Time) int { return a.Compare(b) })
	span := max(now.Sub(oldest), spareMinRateSpan)
	return float64(len(s.ends)) / span.Seconds()
}

// booted notes one boot of a policy's runner.
func (s *spareState) booted(pol rm.PolicyID, d time.Duration) {
	if d <= 0 {
		return
	}
	if s.boots == nil {
		s.boots = make(map[rm.PolicyID][]time.Duration)
	}
	b := append(s.boots[pol], d)
	if over := len(b) - bootSamples; over > 0 {
		b = slices.Delete(b, 0, over)
	}
	s.boots[pol] = b
}

// boot is a policy's measured boot: the fastest of its last samples, each
// an upper bound (a runner takes a job, or is seen online, only after it
// listens). ok is false while nothing was measured.
func (s *spareState) boot(pol rm.PolicyID) (time.Duration, bool) {
	b := s.boots[pol]
	if len(b) == 0 {
		return 0, false
	}
	return slices.Min(b), true
}

func (s *spareState) bootOr(pol rm.PolicyID) time.Duration {
	if d, ok := s.boot(pol); ok {
		return d
	}
	return DefaultBootEstimate
}

// cost is what a spare of pol is counted at: the largest RSS an idle
// runner of it was seen at, else DefaultSpareMemory.
func (s *spareState) cost(pol rm.PolicyID) uint64 {
	if v := s.idleRSS[pol]; v > 0 {
		return v
	}
	return DefaultSpareMemory
}

// meanJob is the mean duration of the last jobs, 0 while none ended.
func (s *spareState) meanJob() time.Duration {
	if len(s.durs) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s.durs {
		sum += d
	}
	return sum / time.Duration(len(s.durs))
}

// endRate is the jobs ending per second: the larger of the ends seen and
// those busy runners will bring, at the mean job duration; until a job's
// length is measured, a job is taken to last one boot (more spares, at
// most the cap, rather than a burst's next jobs waiting a boot each).
func (s *spareState) endRate(now time.Time, busy int, boot time.Duration) float64 {
	r := s.rate(now)
	d := s.meanJob()
	if d <= 0 {
		d = boot
	}
	if d > 0 && busy > 0 {
		r = max(r, float64(busy)/d.Seconds())
	}
	return r
}

// concluded takes what an ended attempt tells of job durations and job
// ends. Not of boots: its IdleAt or BusyAt may be a poll's sighting, and
// bootSeen took any boot the runner showed when it showed it (boot.go).
func (s *spareState) concluded(a rm.Attempt, ranJob bool, ended time.Time) {
	if !ranJob {
		return
	}
	s.jobEnded(ended)
	if !a.BusyAt.IsZero() && ended.After(a.BusyAt) {
		s.durs = append(s.durs, ended.Sub(a.BusyAt))
		if over := len(s.durs) - durSamples; over > 0 {
			s.durs = slices.Delete(s.durs, 0, over)
		}
	}
}
