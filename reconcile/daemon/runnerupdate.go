package daemon

import (
	"context"
	"time"

	"github.com/runner-manager/runner-manager/reconcile/install"
)

// runnerUpdateEvery is how often the automatic runner update looks for a
// newer release.
const runnerUpdateEvery = 6 * time.Hour

// updateRunner keeps the newest runner release installed until ctx ends
// (Config.AutoUpdateRunner; install.Updater).
func (d *Daemon) updateRunner(ctx context.Context) {
	u := install.Updater{GitHub: d.client, DataDir: d.cfg.DataDir, Log: d.log, Keep: d.policyRunnerDirs}
	u.Run(ctx, runnerUpdateEvery)
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
