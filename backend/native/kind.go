package native

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/doctor/check"
)

// Kind is the native backend as the rest of the manager knows it: the
// default backend, whose policies carry no settings of their own.
type Kind struct{}

// Name is rm.BackendNative.
func (Kind) Name() rm.Backend { return rm.BackendNative }

// SettingsIn is "": a native policy has no settings of its own.
func (Kind) SettingsIn(rm.Policy) string { return "" }

// ValidatePolicy accepts every policy: the rules every policy holds are
// the root's (rm.Policy.Validate).
func (Kind) ValidatePolicy(rm.Policy) error { return nil }

// FromUser keeps the settings as written: any of them is another
// backend's, refused by rm.Policy.ValidateWith.
func (Kind) FromUser(u rm.UserSettings) (rm.ContainerSettings, rm.VMSettings, error) {
	box, fwd := u.AsWritten()
	return box, fwd, nil
}

// Doctor has nothing of its own to check: the doctor's checks of the
// installed runner, runner processes and attempt directories are the
// host's.
func (Kind) Doctor(context.Context, check.Env) []check.Check { return nil }

// CheckConfig has no table to check: the native backend's settings are
// the file's own ([runner], [admission]).
func (Kind) CheckConfig(*configfile.File) error { return nil }
