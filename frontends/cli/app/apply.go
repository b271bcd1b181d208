package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile/daemon/config"
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
  spare = 1                  # optional: most warm spares (0: none)
  memory_estimate = "2GiB"   # optional
  runner_group = "Default"   # optional
  runner_dir = "/opt/runner" # optional
  paused = false             # optional

Policies missing from the journal are added, those that differ are changed,
and this host's policies the file does not list are removed. Every policy is
checked, and removals of policies with live runners refused, before anything
is written.`
}

// applyFile is the file policy apply reads.
type applyFile struct {
	Policy []policySpec `toml:"policy"`
}

// planStep is one change policy apply makes.
type planStep struct {
	op      byte // '+', '~', '-'
	policy  rm.Policy
	changes []string
}

// Run applies the file.
func (c *PolicyApplyCmd) Run(ctx context.Context, a *App) error {
	data, err := os.ReadFile(c.File)
	if err != nil {
		return invalid("read %s: %v", c.File, err)
	}
	var f applyFile
	if _, _, err := config.DecodeStrict(c.File, data, &f); err != nil {
		return err
	}
	// Check every policy before touching the data directory.
	seen := map[string]bool{}
	for i, s := range f.Policy {
		if s.Name == "" {
			return invalid("%s: policy #%d has no name", c.File, i+1)
		}
		if seen[s.Name] {
			return invalid("%s: policy %q is listed twice", c.File, s.Name)
		}
		seen[s.Name] = true
		if _, err := s.build(rm.NewHostID()); err != nil {
			return fmt.Errorf("%s: %w", c.File, err)
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
	existing, err := st.Policies(ctx)
	if err != nil {
		return err
	}
	byName := map[string]rm.Policy{}
	for _, p := range existing {
		byName[p.Name] = p
	}
	var plan []planStep
	for _, s := range f.Policy {
		want, err := s.build(host.ID)
		if err != nil {
			return err
		}
		old, ok := byName[s.Name]
		if !ok {
			plan = append(plan, planStep{op: '+', policy: want})
			continue
		}
		if !old.IsOwnedBy(host.ID) {
			return invalid("%s: policy %q belongs to another host (%s): rename it in the file", c.File, s.Name, old.Host)
		}
		want.ID, want.CreatedAt, want.UpdatedAt = old.ID, old.CreatedAt, old.UpdatedAt
		if ch := policyChanges(old, want); len(ch) > 0 || !policyEqual(old, want) {
			plan = append(plan, planStep{op: '~', policy: want, changes: ch})
		}
	}
	for _, p := range existing {
		if p.IsOwnedBy(host.ID) && !seen[p.Name] {
			live, err := st.ActiveAttempts(ctx, p.ID)
			if err != nil {
				return err
			}
			if len(live) > 0 {
				return fmt.Errorf("policy %s is not in %s but still has %d live runner(s): pause it (`runner-manager policy pause %s`), wait for them to finish, and apply again; nothing was changed",
					p.Name, c.File, len(live), p.Name)
			}
			plan = append(plan, planStep{op: '-', policy: p})
		}
	}
	if len(plan) == 0 {
		a.printf("policies match %s: nothing to do\n", c.File)
		return nil
	}
	for _, s := range plan {
		switch s.op {
		case '+':
			a.printf("+ add %s: %s, max %d, min idle %d%s\n", s.policy.Name, targetShort(s.policy.Target), s.policy.Max, s.policy.MinIdle, pausedNote(s.policy))
		case '~':
			a.printf("~ change %s: %s\n", s.policy.Name, strings.Join(s.changes, ", "))
		case '-':
			a.printf("- remove %s\n", s.policy.Name)
		}
	}
	if c.DryRun {
		a.printf("dry run: nothing changed\n")
		return nil
	}
	now := time.Now().UTC()
	// Removals first, so a file may move a name from one policy to another.
	for _, s := range slices.Concat(filterPlan(plan, '-'), filterPlan(plan, '~'), filterPlan(plan, '+')) {
		p := s.policy
		var err error
		switch s.op {
		case '+':
			p.ID, p.CreatedAt, p.UpdatedAt = rm.NewPolicyID(), now, now
			err = st.InsertPolicy(ctx, p)
		case '~':
			p.UpdatedAt = now
			err = st.UpdatePolicy(ctx, p)
		case '-':
			err = st.DeletePolicy(ctx, p.ID)
		}
		if err != nil {
			return fmt.Errorf("apply %c %s: %w (the steps above it were applied; fix and apply again)", s.op, p.Name, err)
		}
	}
	a.printf("applied %d change(s)\n", len(plan))
	for _, s := range plan {
		if s.op != '-' {
			a.warnNoRunner(s.policy)
			break
		}
	}
	a.pokeDaemon(ctx)
	return nil
}

func filterPlan(plan []planStep, op byte) []planStep {
	var out []planStep
	for _, s := range plan {
		if s.op == op {
			out = append(out, s)
		}
	}
	return out
}

// policyEqual compares what a user sets of a policy.
func policyEqual(a, b rm.Policy) bool {
	return a.Name == b.Name && a.Target.Key() == b.Target.Key() && a.Target.String() == b.Target.String() &&
		cmpOr(a.Backend, rm.BackendNative) == cmpOr(b.Backend, rm.BackendNative) && a.RunnerDir == b.RunnerDir &&
		a.MinIdle == b.MinIdle && a.Max == b.Max && a.MemoryEstimate == b.MemoryEstimate && a.Paused == b.Paused &&
		a.Spare == b.Spare
}
