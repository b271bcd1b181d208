package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// PolicyRmCmd removes a policy.
type PolicyRmCmd struct {
	Name  string `arg:"" help:"Policy name (with --purge, a removed policy's name or id too)." predictor:"policy"`
	Purge bool   `help:"Delete the policy's attempt history too (by default it is kept, marked as a removed policy's)."`
	// KeepScaleSet leaves the scale set the manager created at GitHub.
	KeepScaleSet bool `name:"keep-scale-set" help:"Leave the scale set this manager created for the policy at GitHub (by default it is deleted; one the manager found is always left)."`
}

// Help is the long help of policy rm.
func (c *PolicyRmCmd) Help() string {
	return `A removed policy serves nothing, and its name and scale set are free for a
new policy; its attempts stay in the journal as history ("attempts" marks
them "(removed)", "policy list --all" lists the policy). --purge deletes
the policy and its attempts for good; given the name (or id) of a policy
removed before, it purges that one.

A policy with live runners is not removed: pause it, wait for them to
finish, then remove it.

In scale-set mode, the scale set the manager created for the policy is
deleted at GitHub once the daemon has let go of it (unless another policy
serves it, or --keep-scale-set); a scale set the manager found there, made
by someone else, is left alone. If GitHub cannot be reached, the policy
is removed all the same and "doctor" lists the scale set left behind
("doctor --fix" deletes it).`
}

// Run removes the policy.
func (c *PolicyRmCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyedit.ByName(ctx, st, c.Name)
	if err != nil && c.Purge {
		return c.purgeRemoved(ctx, a, st, err)
	}
	if err != nil {
		return err
	}
	var kept int
	if !c.Purge {
		hist, err := st.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
		if err != nil {
			return err
		}
		kept = len(hist)
	}
	created, hasCreated, err := policyedit.CreatedScaleSet(ctx, st, p)
	if err != nil {
		return err
	}
	remove := st.DeletePolicy
	if c.Purge {
		remove = st.PurgePolicy
	}
	if err := remove(ctx, p.ID); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if !a.daemonRuns(ctx) {
				// Nothing would conclude them: a dead runner's attempt
				// stays live until a daemon looks.
				return fmt.Errorf("policy %s still has live runners, and no daemon runs here to conclude them: pause it (`runner-manager policy pause %s`), run `runner-manager run --once` (it concludes the attempts of runners that are gone), then remove it", p.Name, p.Name)
			}
			return fmt.Errorf("policy %s still has live runners: pause it (`runner-manager policy pause %s`), wait for them to finish (`runner-manager status`), then remove it", p.Name, p.Name)
		}
		return err
	}
	switch {
	case c.Purge:
		a.printf("removed policy %s and deleted its attempt history\n", p.Name)
	case kept == 0:
		a.printf("removed policy %s (it had no attempts)\n", p.Name)
	default:
		a.printf("removed policy %s; its %d attempts are kept as history (`runner-manager attempts --policy %s`; `policy rm --purge %s` deletes them)\n", p.Name, kept, p.Name, p.Name)
	}
	a.pokeDaemon(ctx)
	if !hasCreated {
		return nil
	}
	if c.KeepScaleSet {
		// Kept on purpose: no longer this manager's to delete, nor an orphan.
		if err := st.ForgetScaleSet(ctx, created.ScaleSetID); err != nil {
			return err
		}
		a.printf("kept its scale set %q at GitHub (--keep-scale-set)\n", created.Name)
		return nil
	}
	return deleteCreatedScaleSet(ctx, a, st, p, created)
}

// deleteCreatedScaleSet deletes at GitHub the scale set the manager
// created for p, just removed, once the daemon no longer serves p (a
// serving daemon would find its scale set gone and create it again), and
// forgets its record. A failure says the policy is removed and how the
// scale set left behind is deleted later.
func deleteCreatedScaleSet(ctx context.Context, a *App, st store.Store, p rm.Policy, rec rm.ScaleSetRecord) error {
	left := func(err error) error {
		if cause, ok := github.Unreachable(err); ok {
			where := "[github] url"
			if gh, err := a.GitHub(); err == nil {
				where = gh.WebURL()
			}
			return withTry(rm.WithClass(rm.ClassUnavailable, fmt.Errorf("policy %s is removed, but its scale set %q (id %d) is left at GitHub: GitHub is unreachable at %s (%s); once it answers, `runner-manager doctor --fix` deletes it",
				p.Name, rec.Name, rec.ScaleSetID, where, cause)), "doctor --fix")
		}
		return withTry(fmt.Errorf("policy %s is removed, but its scale set %q (id %d) is left at GitHub: %w; `runner-manager doctor --fix` deletes it later",
			p.Name, rec.Name, rec.ScaleSetID, err), "doctor --fix")
	}
	if err := a.waitDaemonLetsGo(ctx, p.ID); err != nil {
		return left(err)
	}
	if p.Fleet {
		if err := waitFleetLetsGo(ctx, st, p.ID); err != nil {
			return left(err)
		}
	}
	gh, err := a.GitHub()
	if err != nil {
		return left(err)
	}
	scope, err := rm.ParseScope(rec.Scope)
	if err != nil {
		return left(err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := gh.DeleteScaleSet(dctx, scope, rec.ScaleSetID); err != nil {
		return left(err)
	}
	if err := st.ForgetScaleSet(ctx, rec.ScaleSetID); err != nil {
		return err
	}
	a.printf("deleted its scale set %q at GitHub (id %d), which this manager had created\n", rec.Name, rec.ScaleSetID)
	return nil
}

// daemonRuns tells whether a daemon answers on the data directory's
// socket (a daemon that is slow to answer counts as running).
func (a *App) daemonRuns(ctx context.Context) bool {
	d, err := a.Daemon()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = d.Status(ctx)
	return !errors.Is(err, localapi.ErrNotRunning)
}

// waitDaemonLetsGo waits until the running daemon, told of a policy's
// removal, no longer serves it (its status no longer shows it), for at
// most 30 s; with no daemon running there is nothing to wait for.
func (a *App) waitDaemonLetsGo(ctx context.Context, id rm.PolicyID) error {
	d, err := a.Daemon()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := d.Status(ctx)
		if errors.Is(err, localapi.ErrNotRunning) {
			return nil
		}
		if err == nil && !slices.ContainsFunc(st.Policies, func(ps status.Policy) bool { return ps.ID == id }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the running daemon still serves the policy after 30 s")
		case <-tick.C:
		}
	}
}

// waitFleetLetsGo waits until no host of the fleet holds a fleet
// policy's lease, and so its session, for at most 45 s: every host's
// daemon sees the removal at its next refresh of the policies (15 s) and
// gives the lease up as its loop ends. A lease that runs out unrenewed
// (its holder gone) lets go too.
func waitFleetLetsGo(ctx context.Context, st store.Store, id rm.PolicyID) error {
	sets, ok := st.(store.FleetSets)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		l, err := sets.FleetLease(ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && (l.Holder.IsZero() || l.Left <= 0) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("the fleet's lease of the policy could not be read: %w", err)
			}
			return fmt.Errorf("host %s of the fleet still holds the policy's session after 45 s", l.Holder)
		case <-tick.C:
		}
	}
}

// purgeRemoved purges the removed policies named (or with the id) c.Name;
// notFound is the error of the lookup among the policies in force.
func (c *PolicyRmCmd) purgeRemoved(ctx context.Context, a *App, st store.Store, notFound error) error {
	removed, err := st.RemovedPolicies(ctx)
	if err != nil {
		return err
	}
	n := 0
	for _, p := range removed {
		if p.Name != c.Name && p.ID.String() != c.Name {
			continue
		}
		if err := st.PurgePolicy(ctx, p.ID); err != nil {
			return err
		}
		a.printf("purged removed policy %s (%s) and its attempt history\n", p.Name, p.ID)
		n++
	}
	if n == 0 {
		return notFound
	}
	return nil
}
