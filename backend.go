package runnermanager

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultBackend is the backend of a policy that names none.
const DefaultBackend = BackendNative

// OrDefault is b, or DefaultBackend when b is "".
func (b Backend) OrDefault() Backend {
	if b == "" {
		return DefaultBackend
	}
	return b
}

// BackendKind is what the manager asks of a backend beyond its launcher:
// the rules of the settings its policies carry. Each backend package
// fills it; one list of them (package backend) is handed to whatever
// makes or loads policies (Policy.ValidateWith), so that nothing else
// names a backend.
type BackendKind interface {
	// Name is the backend a policy names.
	Name() Backend
	// SettingsIn describes the settings of this backend that p sets, as an
	// error names them (`container settings (image "runner")`); "" when p
	// sets none. A policy of another backend must set none.
	SettingsIn(p Policy) string
	// ValidatePolicy checks the settings of p, a policy of this backend.
	// Its error is said after the policy's name.
	ValidatePolicy(p Policy) error
	// FromUser is the settings of a policy of this backend from what a
	// user wrote (flags, a policies file). A backend that takes none of
	// them keeps them as written (UserSettings.AsWritten), for
	// ValidateWith to refuse.
	FromUser(u UserSettings) (ContainerSettings, VMSettings, error)
}

// UserSettings are a policy's backend settings as a user writes them, one
// set of flags or keys for every backend: Image is the container
// backend's image reference or the vm backend's image directory.
type UserSettings struct {
	Image   string
	CPUs    float64
	Network string
	Env     []string
	Volumes []string
	// Forward are the vm backend's forwards (vm_forward, --vm-forward).
	Forward []string
}

// AsWritten puts the settings where they are written for: all but
// Forward in ContainerSettings, Forward in VMSettings.
func (u UserSettings) AsWritten() (ContainerSettings, VMSettings) {
	return ContainerSettings{Image: u.Image, CPUs: u.CPUs, Network: u.Network,
			Env: slices.Clone(u.Env), Volumes: slices.Clone(u.Volumes)},
		VMSettings{Forward: slices.Clone(u.Forward)}
}

// KindOf is the kind among kinds of p's backend (DefaultBackend for "");
// false when none is.
func KindOf(kinds []BackendKind, p Policy) (BackendKind, bool) {
	b := p.Backend.OrDefault()
	i := slices.IndexFunc(kinds, func(k BackendKind) bool { return k.Name() == b })
	if i < 0 {
		return nil, false
	}
	return kinds[i], true
}

// ValidateWith checks p as Validate does and, in its place among those
// checks, its backend by kinds, the backends known: one of them, and no
// settings of another.
func (p Policy) ValidateWith(kinds []BackendKind) error {
	return p.validate(func() error { return p.validateBackend(kinds) })
}

func (p Policy) validateBackend(kinds []BackendKind) error {
	mine, known := KindOf(kinds, p)
	for _, k := range kinds {
		if k == mine {
			continue
		}
		if what := k.SettingsIn(p); what != "" {
			return invalidf("policy %q: %s need backend %q", p.Name, what, k.Name())
		}
	}
	if !known {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = fmt.Sprintf("%q", k.Name())
		}
		return invalidf("policy %q: backend %q is not supported (want %s)", p.Name, p.Backend, orList(names))
	}
	if err := mine.ValidatePolicy(p); err != nil {
		return invalidf("policy %q: %v", p.Name, err)
	}
	return nil
}

// orList writes "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
