package daemon

import (
	"context"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/reconcile/install"
)

// How often the automatic runner update looks for a newer release: every
// runnerUpdateEvery, and every runnerUpdateSoon while a policy's launches
// are held because GitHub deprecated its runner.
const (
	runnerUpdateEvery = 6 * time.Hour
	runnerUpdateSoon  = 10 * time.Minute
	runnerUpdateLook  = time.Minute
)

// updateRunner keeps the newest runner release installed until ctx ends
// (Config.AutoUpdateRunner; install.Updater).
func (d *Daemon) updateRunner(ctx context.Context) {
	u := install.Updater{GitHub: d.client, DataDir: d.cfg.DataDir, Log: d.log, Keep: d.policyRunnerDirs}
	t := time.NewTicker(runnerUpdateLook)
	defer t.Stop()
	var last time.Time
	for {
		if due := time.Since(last); last.IsZero() || due >= runnerUpdateEvery || (due >= runnerUpdateSoon && d.runnerDeprecated()) {
			last = time.Now()
			u.Once(ctx, runnerUpdateEvery)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runnerDeprecated reports whether a policy's launches are held because
// its runner exited 7.
func (d *Daemon) runnerDeprecated() bool {
	for _, p := range d.Status().Policies {
		if strings.Contains(p.LastError, "runner version deprecated") {
			return true
		}
	}
	return false
}

// policyRunnerDirs lists the runner directories this host's policies name.
func (d *Daemon) policyRunnerDirs(ctx context.Context) ([]string, error) {
	ps, err := d.st.Policies(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if p.RunnerDir != "" {
			out = append(out, p.RunnerDir)
		}
	}
	return out, nil
}
