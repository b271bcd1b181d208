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
