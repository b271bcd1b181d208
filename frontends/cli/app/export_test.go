package app

import (
	"context"

	"github.com/runner-manager/runner-manager/simulate"
	"github.com/runner-manager/runner-manager/store"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

// SetExecutable makes service install see path as this program.
func SetExecutable(path string) func() {
	old := osExecutable
	osExecutable = func() (string, error) { return path, nil }
	return func() { osExecutable = old }
}

// SetHostOS makes service install and uninstall write for goos.
func SetHostOS(goos string) func() {
	old := hostOS
	hostOS = goos
	return func() { hostOS = old }
}

// SetTUI replaces the terminal UI runner (tests use a simulated screen).
func SetTUI(run func(context.Context, tui.Source, tui.Options) error) func() {
	old := runTUI
	runTUI = run
	return func() { runTUI = old }
}

// SetDirWritable replaces the data directory's write probe.
func SetDirWritable(probe func(dir string) error) func() {
	old := dirWritable
	dirWritable = probe
	return func() { dirWritable = old }
}

// SetLingering replaces the check of whether systemd lingers for a user.
func SetLingering(f func(username string) bool) func() {
	old := lingering
	lingering = f
	return func() { lingering = old }
}

// SetStoreOpened wraps every store a command opens (a fleet store's
// boundary over the SQLite journal).
func SetStoreOpened(wrap func(store.Store) store.Store) func() {
	old := storeOpened
	storeOpened = wrap
	return func() { storeOpened = old }
}

// SetCompareCase replaces the run of one case of bench --compare.
func SetCompareCase(run func(context.Context, simulate.CompareOptions) (simulate.CompareReport, error)) func() {
	old := compareCase
	compareCase = run
	return func() { compareCase = old }
}

// SetWarmCase replaces the run of bench --case warm.
func SetWarmCase(run func(context.Context, simulate.WarmOptions) (simulate.WarmReport, error)) func() {
	old := warmCase
	warmCase = run
	return func() { warmCase = old }
}

// SetRunCommand replaces how service commands (systemctl, launchctl) run.
func SetRunCommand(run func(ctx context.Context, argv []string) (string, error)) func() {
	old := runCommand
	runCommand = run
	return func() { runCommand = old }
}
