package reconcile

import rm "github.com/runner-manager/runner-manager"

// Target is what a loop asks of its scale target's services: Registrar,
// where its runners register, and Demand, where its demand comes from.
// GitHub's own targets (github.ScaleSetTarget, github.ClassicTarget) are
// both at once and go in both fields (TargetOf); an embedder may pair its
// own demand source with GitHub's registrar, or bring both.
//
// Two fields rather than one interface embedding both: the two sides are
// separate contracts with separate owners, a pair needs no adapter type,
// and a capability of one side (the registrar's rm.SharedRunnerLister) is
// asked of that side alone.
type Target struct {
	Registrar rm.Registrar
	// Demand is closed (Close) when the target's loop ends; a Registrar
	// that is another value and holds anything is its maker's to release.
	Demand rm.DemandSource
}

// TargetOf is the Target of a value that is both registrar and demand
// source.
func TargetOf(t interface {
	rm.Registrar
	rm.DemandSource
}) Target {
	return Target{Registrar: t, Demand: t}
}

// valid reports whether both sides are set.
func (t Target) valid() bool { return t.Registrar != nil && t.Demand != nil }
