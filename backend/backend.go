// Package backend is the one list of the backends a host knows: what
// makes or loads policies checks them against it (All, for
// rm.Policy.ValidateWith), the configuration file has each check its own
// table (Configs), and the doctor asks each for its own checks (Doctors),
// so that nothing else names a backend. A new backend is a
// package of its own and a line here.
package backend

import (
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/doctor/check"
)

// Backend is a backend as the host's programs ask it: the rules of its
// policies' settings, of its table of the configuration file, and its
// own checks of the host.
type Backend interface {
	rm.BackendKind
	configfile.BackendSection
	check.Doctor
}

// list is the one list, the default backend (native) first: the order
// errors name them in and the doctor checks them in.
func list() []Backend {
	return []Backend{native.Kind{}, container.Kind{}, vm.Kind{}}
}

// All are the backends' kinds, for rm.Policy.ValidateWith and
// rm.KindOf.
func All() []rm.BackendKind {
	var out []rm.BackendKind
	for _, b := range list() {
		out = append(out, b)
	}
	return out
}

// Configs are the backends' rules of their tables of the configuration
// file, for configfile.Sources.
func Configs() []configfile.BackendSection {
	var out []configfile.BackendSection
	for _, b := range list() {
		out = append(out, b)
	}
	return out
}

// Doctors are the backends' own checks, for doctor.Setup.
func Doctors() []check.Doctor {
	var out []check.Doctor
	for _, b := range list() {
		out = append(out, b)
	}
	return out
}
