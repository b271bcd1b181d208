package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/policyedit"
)

// PolicyApplyCmd makes the policies match a file.
type PolicyApplyCmd struct {
	File   string `arg:"" help:"TOML file with [[policy]] tables." type:"existingfile"`
	DryRun bool   `help:"Print the plan; change nothing."`
}

// Help is the long help of policy apply.
func (c *PolicyApplyCmd) Help() string {
	return `The file lists every policy this host should have, one [[policy]] table
each, with the keys of policy add:

  [[policy]]
  name = "home"
  repo = "octo-org/app"      # or org = "...", or enterprise = "..."
  scale_set = "home"         # or labels = ["linux", "gpu"]
  max = 4
  min_idle = 0               # optional
  spare = "auto"             # optional: warm spares, "auto" (the default), N at most, or 0
  memory_estimate = "2GiB"   # optional
  runner_group = "Default"   # optional
  runner_dir = "/opt/runner" # optional (~, $VAR; relative: beside the file)
  paused = false             # optional
  fleet = false              # optional: true makes it the fleet's (policy add --fleet)
  cold = false               # optional: true keeps no workspace slot between jobs (policy add --cold)

Policies missing from the journal are added, those that differ are changed,
and this host's policies the file does not list are removed. Every policy is
checked, and removals of policies with live runners refused, before anything
is written; then all the changes are made at once, or none of them.

A fleet policy (fleet = true) needs a PostgreSQL store and is every host's:
any host's file may change it, and only the file of the host that added it
removes it. Turning fleet on or off is refused while the policy has live
runners: pause it and let them finish first.`
}

// Run applies the file.
func (c *PolicyApplyCmd) Run(ctx context.Context, a *App) error {
	// Every policy is checked before the data directory is touched.
	f, err := policyedit.ReadFile(c.File, backend.All())
	if err != nil {
		return err
	}
	for _, s := range f.Policy {
		if !s.Fleet {
			continue
		}
		// The SQLite journal is not made for a file it cannot hold.
		cfg, err := a.Config()
		if err != nil {
			return err
		}
		if !daemon.StoreConfigOf(cfg).Postgres() {
			return fmt.Errorf("%s: %w", c.File, policyedit.NeedsFleetStore(rm.Policy{Name: s.Name}))
		}
	}
	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	st, err := a.Store(ctx)
	if err != nil {
		return err
	}
	plan, err := policyedit.Make(ctx, st, host.ID, f)
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		a.printf("policies match %s: nothing to do\n", c.File)
		return nil
	}
	for _, s := range plan {
		switch s.Op {
		case policyedit.Add:
			a.printf("+ add %s: %s, max %d, min idle %d%s\n", s.Policy.Name, policyedit.ShortTarget(s.Policy.Target), s.Policy.Max, s.Policy.MinIdle, pausedNote(s.Policy))
		case policyedit.Change:
			a.printf("~ change %s: %s\n", s.Policy.Name, strings.Join(s.Changes, ", "))
		case policyedit.Remove:
			a.printf("- remove %s\n", s.Policy.Name)
		}
	}
	if c.DryRun {
		a.printf("dry run: nothing changed\n")
		return nil
	}
	if err := plan.Apply(ctx, st, time.Now().UTC()); err != nil {
		return err
	}
	a.printf("applied %d change(s)\n", len(plan))
	given := map[string][]string{}
	for _, sp := range f.Policy {
		given[sp.Name] = sp.Labels
	}
	for _, s := range plan {
		if s.Op != policyedit.Remove {
			a.noteLabels(ctx, st, given[s.Policy.Name], s.Policy)
		}
	}
	for _, s := range plan {
		if s.Op != policyedit.Remove {
			a.warnNoRunner(s.Policy)
			break
		}
	}
	a.pokeDaemon(ctx)
	return nil
}
