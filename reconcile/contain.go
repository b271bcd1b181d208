package reconcile

import (
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// memoryLimit is the memory limit of each attempt of policy pol, by the
// root's one rule (rm.Policy.MemoryLimitFor); the expected peak is asked
// of admission only for a limit drawn from it.
func (l *Loop) memoryLimit(pol rm.Policy) uint64 {
	var expected uint64
	if pol.MemoryLimit == rm.MemoryLimitFromPeaks {
		expected = l.cfg.Admission.expectedPeak(l.cfg.Meters, pol)
	}
	return pol.MemoryLimitFor(expected)
}

// limitMemory asks the launcher to limit the attempt's memory before its
// launch, where its policy sets a limit. A launcher that cannot (no
// cgroup with a memory controller here) runs it unlimited, and says so.
func (p *pass) limitMemory(it *item) {
	limit := p.l.memoryLimit(*it.pol)
	if limit == 0 {
		return
	}
	mc, ok := p.l.cfg.launcherFor(it.pol).(rm.MemoryContainer)
	if !ok {
		it.log.Debug("the launcher cannot limit memory: the attempt runs unlimited", "limit", bytesize.Format(limit))
		return
	}
	if err := mc.SetMemoryLimit(it.a.ID, limit); err != nil {
		// The launcher warns once; every attempt would repeat it.
		it.log.Debug("the policy's memory limit cannot be applied: the attempt runs unlimited", "limit", bytesize.Format(limit), "err", err)
		return
	}
	it.log.Debug("memory limit set", "limit", bytesize.Format(limit))
}

// oomOutcome is the outcome of an attempt the kernel killed a process of
// for want of memory (at its limit, or the host's): Failed(OOMKilled),
// whatever the runner made of it (a job whose step was killed completes
// as failed; a killed runner exits 137). A stop by a user stays a stop.
func (p *pass) oomOutcome(it *item, o rm.Outcome) rm.Outcome {
	if o.Kind == rm.Failed && o.Reason == rm.Stopped {
		return o
	}
	mc, ok := p.l.cfg.launcherFor(it.pol).(rm.MemoryContainer)
	if !ok || !it.launched() {
		return o
	}
	m, ok := mc.GroupMemory(it.a.ID)
	if !ok || m.OOMKills == 0 {
		return o
	}
	detail := fmt.Sprintf("the kernel killed %d of its processes for want of memory (the host's)", m.OOMKills)
	switch {
	case m.LimitBytes > 0 && m.PeakBytes > 0:
		detail = fmt.Sprintf("the kernel killed %d of its processes at its memory limit of %s (peak %s)",
			m.OOMKills, bytesize.Format(m.LimitBytes), bytesize.Format(m.PeakBytes))
	case m.LimitBytes > 0:
		detail = fmt.Sprintf("the kernel killed %d of its processes at its memory limit of %s",
			m.OOMKills, bytesize.Format(m.LimitBytes))
	}
	if o.Detail != "" {
		detail += "; " + o.Detail
	}
	return rm.FailedWith(rm.OOMKilled, detail)
}
