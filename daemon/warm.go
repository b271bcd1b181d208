package daemon

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/warm"
)

// slotsOrNil makes the host's workspace slots when warm jobs are on: nil
// as an rm.Slots, not a nil *warm.Pool, when they are off.
func (d *Daemon) slotsOrNil() rm.Slots {
	if !d.cfg.Warm.Enabled {
		return nil
	}
	if d.slots == nil {
		d.slots = warm.NewPool(d.dir, warm.WithCap(d.cfg.Warm.Cap), warm.WithLogger(d.log))
	}
	return d.slots
}

// Slots is the host's workspace slots; nil when warm jobs are off.
func (d *Daemon) Slots() *warm.Pool { return d.slots }

// holdSlots gives the journal's live attempts of this host their slots
// again before any loop leases one: a runner re-adopted after a restart
// keeps the work folder it runs in.
func (d *Daemon) holdSlots(ctx context.Context) {
	if d.slots == nil {
		return
	}
	live, err := d.st.LiveAttempts(ctx, d.host.ID)
	if err != nil {
		d.log.Warn("live attempts' workspace slots not held again: the journal did not answer; new attempts may share one", "err", err)
		return
	}
	ps, _ := d.st.Policies(ctx) // without them, the default backend's slots
	d.slots.HoldLive(live, ps)
}
