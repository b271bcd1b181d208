//go:build !linux

package app

import rm "github.com/runner-manager/runner-manager"

// leftoverProcesses is Linux only: elsewhere `run` stops runner processes
// no live attempt owns at its start.
func leftoverProcesses(string, map[rm.AttemptID]bool, bool, bool) []check {
	return []check{{OK: true, What: "runner processes: not looked for on this system (run stops leftovers at its start)"}}
}
