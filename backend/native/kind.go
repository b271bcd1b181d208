package native

import rm "github.com/runner-manager/runner-manager"

// Kind is the native backend as the rest of the manager knows it: the
// default backend, whose policies carry no settings of their own.
var Kind rm.BackendKind = kind{}

type kind struct{}

func (kind) Name() rm.Backend               { return rm.BackendNative }
func (kind) SettingsIn(rm.Policy) string    { return "" }
func (kind) ValidatePolicy(rm.Policy) error { return nil }

func (kind) FromUser(u rm.UserSettings) (rm.ContainerSettings, rm.VMSettings, error) {
	box, fwd := u.AsWritten()
	return box, fwd, nil
}
