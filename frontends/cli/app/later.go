package app

import (
	"context"
	"errors"
)

var errNotYet = errors.New("not built yet")

// RunCmd is the daemon.
type RunCmd struct {
	Once        bool   `help:"Run one pass of every loop and exit."`
	Drain       bool   `help:"On SIGINT/SIGTERM, remove idle runners and wait for busy ones to finish before exiting."`
	MetricsAddr string `help:"Serve Prometheus metrics at http://ADDR/metrics; a port alone (:9464) listens on loopback only. Default: off." env:"RUNNER_MANAGER_METRICS_ADDR" placeholder:"ADDR"`
}

// Run runs the daemon.
func (c *RunCmd) Run(ctx context.Context, a *App) error { return errNotYet }

// RunnerCmd groups the runner commands.
type RunnerCmd struct {
	Install RunnerInstallCmd `cmd:"" help:"Download the runner GitHub offers, verify its checksum, install it in the data directory."`
}

// RunnerInstallCmd installs a runner.
type RunnerInstallCmd struct {
	Version string `arg:"" optional:"" help:"The version to install, as X.Y.Z (default: the newest GitHub offers)."`
	scopeFlags
}

// Run installs the runner.
func (c *RunnerInstallCmd) Run(ctx context.Context, a *App) error { return errNotYet }

// DoctorCmd checks the setup.
type DoctorCmd struct {
	Fix bool `help:"Remove leftover runner registrations and processes, and tighten the data directory's mode."`
}

// Run checks the setup.
func (c *DoctorCmd) Run(ctx context.Context, a *App) error { return errNotYet }

// TUICmd runs the terminal UI.
type TUICmd struct{}

// Run runs the terminal UI.
func (c *TUICmd) Run(ctx context.Context, a *App) error { return errNotYet }

// DemoCmd runs the demo.
type DemoCmd struct {
	Jobs     int  `help:"Jobs to enqueue (default ${default})." default:"20" placeholder:"N"`
	Policies int  `help:"Policies to serve them, one scale set (or label set) each (default ${default})." default:"2" placeholder:"N"`
	TUI      bool `name:"tui" help:"Show the terminal UI instead of a progress line."`
	Classic  bool `help:"Classic mode (labels) instead of scale sets."`
}

// Run runs the demo.
func (c *DemoCmd) Run(ctx context.Context, a *App) error { return errNotYet }

// RunFakeRunnerIfNamed runs the fake runner when args[0] names the runner
// listener, returning its exit status and true.
func RunFakeRunnerIfNamed(args []string) (int, bool) {
	return 0, false
}
