package native

import (
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// Runners that boot or wait for a job yield the CPU to the jobs that run:
// each attempt's cgroup starts at the lowest CPU weight, and goes back to
// the kernel's default when its runner takes a job (JobStarted). A spare
// booting beside running jobs on a small host then takes only the CPU
// they leave. An attempt without a cgroup (or without the cpu controller
// in its hierarchy) runs at the default weight throughout.

// lowerUntilJob gives a new attempt's group the lowest CPU weight.
func (l *Launcher) lowerUntilJob(g *platform.Cgroup) {
	if err := g.SetCPUWeight(platform.CPUWeightLowest); err != nil {
		l.contain.cpuWeightOnce.Do(func() {
			l.log.Info("booting and idle runners run at the default CPU weight: their cgroups have no cpu controller", "why", err.Error())
		})
	}
}

var _ rm.JobStarter = (*Launcher)(nil)

// JobStarted gives the attempt's group the default CPU weight back: its
// runner took a job (GitHub's word, which the loop passes on).
func (l *Launcher) JobStarted(a rm.AttemptID) {
	if g, ok := l.findGroup(a); ok {
		_ = g.SetCPUWeight(platform.CPUWeightDefault)
	}
}
