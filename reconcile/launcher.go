// Package reconcile owns the autoscaler: Loop, one level-based reconcile
// loop per scale target; the Supervisor that runs the loops of a host's
// policies; and admission (memory, disk, max). It drives launchers through
// the root's contract (rm.Launcher and its optional capabilities) and
// declares what else it needs of the parts it drives: Target and Meters.
package reconcile

import rm "github.com/runner-manager/runner-manager"

// launcherFor is the launcher of a policy's backend: its entry in
// Launchers, else Launcher (the default backend's, rm.DefaultBackend).
func (c *Config) launcherFor(p *rm.Policy) rm.Launcher {
	if l, ok := c.Launchers[p.Backend.OrDefault()]; ok && l != nil {
		return l
	}
	return c.Launcher
}
