package daemon

import (
	"context"
	"maps"
	"slices"

	rm "github.com/runner-manager/runner-manager"
)

// removeLeftovers asks, at a run's start, each launcher that can
// (rm.LeftoverRemover: the container backend) to remove what it left of
// attempts the journal has not live, when a policy of this host uses its
// backend; the loops re-adopt the live ones. A launcher that does not
// answer (an engine down) is said and the run goes on: its attempts are
// concluded as the loops find them gone.
func (d *Daemon) removeLeftovers(ctx context.Context) {
	removers := map[rm.Backend]rm.LeftoverRemover{}
	if r, ok := d.scfg.Launcher.(rm.LeftoverRemover); ok {
		removers[rm.DefaultBackend] = r
	}
	for b, l := range d.scfg.Launchers {
		if r, ok := l.(rm.LeftoverRemover); ok {
			removers[b] = r
		}
	}
	if len(removers) == 0 {
		return
	}
	ps, err := d.st.Policies(ctx)
	if err != nil {
		return
	}
	used := map[rm.Backend]bool{}
	for _, p := range ps {
		if !p.IsOwnedBy(d.host.ID) {
			continue
		}
		if b := p.Backend.OrDefault(); removers[b] != nil {
			used[b] = true
		}
	}
	if len(used) == 0 {
		return
	}
	live, err := d.st.LiveAttempts(ctx, d.host.ID)
	if err != nil {
		d.log.Warn("leftovers of the launchers not looked for: the journal did not answer", "err", err)
		return
	}
	ids := make(map[rm.AttemptID]bool, len(live))
	for _, a := range live {
		ids[a.ID] = true
	}
	for _, b := range slices.Sorted(maps.Keys(used)) {
		if err := removers[b].RemoveLeftovers(ctx, func(a rm.AttemptID) bool { return ids[a] }); err != nil {
			d.log.Warn("leftovers not all removed", "backend", b, "err", err)
		}
	}
}
