package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store"
)

// PolicyMoveCmd hands a policy to another host of the fleet.
type PolicyMoveCmd struct {
	Name string `arg:"" help:"Policy name." predictor:"policy"`
	Host string `required:"" help:"The host to hand it to: its name or id, a host whose daemon ran against this store." placeholder:"HOST"`
}

// Help is the long help of policy move.
func (c *PolicyMoveCmd) Help() string {
	return `A policy is served by exactly one host. With a store that hosts share
(PostgreSQL: [store] url, --store), move hands one to another host: that
host's daemon picks it up within seconds, and this one stops serving it.

It is refused while the policy has live runners, which only their own host
may conclude: pause it, wait for them to finish (runner-manager status),
move it, and resume it. A fleet policy (policy add --fleet) is every host's:
there is nothing to move.

Example:
  runner-manager policy move gpu --host mac-mini`
}

// Run moves the policy.
func (c *PolicyMoveCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyedit.ByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	if p.Fleet {
		return invalid("policy %q is the fleet's: every host serves it; there is nothing to move (`runner-manager policy edit %s --no-fleet` makes it one host's)", p.Name, p.Name)
	}
	to, err := daemon.FindHost(ctx, st, c.Host)
	if err != nil {
		return err
	}
	if p.Host == to.ID {
		a.printf("policy %s is already served by host %s\n", p.Name, to.Name)
		return nil
	}
	err = st.MovePolicy(ctx, p.ID, to.ID)
	var live *store.LiveAttemptsError
	switch {
	case errors.As(err, &live):
		return fmt.Errorf("policy %s has %d live runners, which only their host may conclude: pause it (`runner-manager policy pause %s`), wait for them to finish (`runner-manager status`), then move it",
			p.Name, live.Live, p.Name)
	case err != nil:
		return err
	}
	a.printf("moved policy %s to host %s (%s): its daemon picks it up within seconds\n", p.Name, to.Name, to.ID)
	a.pokeDaemon(ctx)
	return nil
}
