package app

import (
	"context"
	"errors"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/localapi"
)

// RunCmd is the daemon.
type RunCmd struct {
	Once        bool   `help:"Run one pass of every policy's loop (conclude, reap, keep min idle) and exit."`
	Drain       bool   `help:"On SIGINT/SIGTERM, remove idle runners and wait for busy ones to finish before exiting (default: busy ones keep running; the next start re-adopts them)."`
	MetricsAddr string `help:"Serve Prometheus metrics at http://ADDR/metrics; a port alone (:9464) listens on loopback only (default: off, or [daemon] metrics_addr)." env:"RUNNER_MANAGER_METRICS_ADDR" placeholder:"ADDR"`
}

// Help is the long help of run.
func (c *RunCmd) Help() string {
	return `run is the daemon: for every active policy of this host it watches demand
(scale-set mode: a long poll of the scale set; classic mode: the repository's
queued jobs, or webhooks), starts one ephemeral runner per job as memory and
disk admit, concludes and cleans each attempt, and reaps leftovers. It serves
its live figures to "status" and "tui" on <data>/manager.sock.

SIGINT or SIGTERM stop it: idle runners are deregistered and stopped; busy
ones keep their jobs and are re-adopted at the next start, unless --drain:
then busy ones are awaited first. One daemon runs a data directory (a lock
on <data>/manager.lock) and a host (a lease in the journal).`
}

// Run runs the daemon until ctx ends.
func (c *RunCmd) Run(ctx context.Context, a *App) error {
	// The daemon may start on a host no init ran on: one of a fleet whose
	// policies live in PostgreSQL, or a service whose config management
	// wrote the configuration.
	a.createsDataDir, a.serving = true, true
	if a.flagGiven("--metrics-addr") {
		a.setFlag("daemon.metrics_addr", "--metrics-addr", c.MetricsAddr)
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	dcfg, err := daemon.FromConfig(cfg, userAgent())
	if errors.Is(err, configfile.ErrNoCredentials) {
		return fmt.Errorf("%w (try the demo, which needs none: runner-manager demo)", err)
	} else if err != nil {
		return err
	}
	if dcfg.DataDir, err = a.DataDir(); err != nil {
		return err
	}
	if dcfg.Store, err = a.Store(ctx); err != nil {
		return err
	}
	if dcfg.Host, err = a.Host(ctx); err != nil {
		return err
	}
	dcfg.Logger, dcfg.Drain, dcfg.Version = a.Logger(), c.Drain, build().String()
	// The path of this program, read before an update can replace it.
	exe, exeErr := osExecutable()
	d, err := daemon.New(dcfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if c.Once {
		err = d.RunOnce(ctx)
	} else {
		var restart bool
		if restart, err = c.runUntilRestart(ctx, a, d); restart && err == nil {
			if exeErr != nil {
				return fmt.Errorf("stopped to restart, but this program's path is unknown (%w): start it again", exeErr)
			}
			// Stopped as for any restart (busy runners keep their jobs):
			// start again in place on the program now installed.
			d.Close()
			a.Close()
			return reexec(exe)
		}
	}
	if errors.Is(err, localapi.ErrAlreadyRunning) {
		return fmt.Errorf("%w: `runner-manager status` shows it", err)
	}
	if err != nil || !c.Once {
		return err
	}
	n, err := d.OwnedPolicies(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		a.Logger().Warn("no policies yet: add one with `runner-manager policy add`; the daemon picks it up within seconds")
	}
	a.printf("one pass done for %d policies\n", n)
	return nil
}

// runUntilRestart runs the daemon until ctx ends or update asks it to
// restart (restart true).
func (c *RunCmd) runUntilRestart(ctx context.Context, a *App, d *daemon.Daemon) (restart bool, err error) {
	asked, stop := watchRestart()
	defer stop()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	select {
	case err := <-done:
		return false, err
	case <-asked:
		a.Logger().Info("restarting on the program installed now, as asked (update): busy runners keep their jobs")
		cancel()
		return true, <-done
	}
}

// sessionOwner is the owner name of this host's message sessions (doctor
// tells this host's from others').
func sessionOwner(host rm.Host) string { return daemon.SessionOwner(host) }
