package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// The fleet's figures: a running daemon stamps its host's heartbeat every
// DefaultHeartbeatEvery (Config.HeartbeatEvery), and a host whose last
// heartbeat is older than DefaultStaleAfter is shown stale.
const (
	DefaultHeartbeatEvery = 15 * time.Second
	DefaultStaleAfter     = status.DefaultStaleAfter // 3 × DefaultHeartbeatEvery
	// heartbeatRetryBase is the first wait after a failed heartbeat; it
	// doubles with each failure in a row, up to the heartbeat interval.
	heartbeatRetryBase = time.Second
)

// fleetHost is this host as the fleet records it.
func (d *Daemon) fleetHost(now time.Time) store.FleetHost {
	h := d.host
	h.SeenAt = now.UTC()
	return store.FleetHost{Host: h, Version: d.cfg.Version}
}

// heartbeat registers this host in the fleet (its name, memory, cpus, OS
// and version) and stamps its heartbeat every Config.HeartbeatEvery until
// ctx ends. A store that is away (a PostgreSQL restart, the network) is
// logged at WARN and retried with a backoff from 1 s up to the interval,
// never stopping the daemon; once it answers again the beats go on, the
// host registered again if its record went, and every loop is nudged so
// that passes that failed meanwhile run at once instead of at the end of
// their backoff. A store without fleet records (not a store.Fleet) has no
// heartbeat.
func (d *Daemon) heartbeat(ctx context.Context, nudge func()) {
	fl, ok := d.st.(store.Fleet)
	if !ok {
		return
	}
	every := cmp.Or(d.cfg.HeartbeatEvery, DefaultHeartbeatEvery)
	registered, failures := false, 0
	var since time.Time
	for {
		now := time.Now()
		var err error
		if registered {
			err = fl.Heartbeat(ctx, d.host.ID, now)
			if errors.Is(err, store.ErrNotFound) {
				registered = false // the record went (a new database): register again
			}
		}
		if !registered {
			if err = fl.RegisterHost(ctx, d.fleetHost(now)); err == nil {
				registered = true
			}
		}
		if ctx.Err() != nil {
			return
		}
		wait := every
		switch {
		case err != nil:
			if failures == 0 {
				since = now
			}
			failures++
			wait = backoff.Policy{Base: heartbeatRetryBase, Cap: every}.Ceiling(failures - 1)
			d.log.Warn("the store does not take this host's heartbeat; retrying", "err", err,
				"failures", failures, "since", since.UTC().Format(time.RFC3339), "retry_in", wait)
		case failures > 0:
			d.log.Info("the store takes this host's heartbeat again", "down_for", time.Since(since).Round(time.Second).String())
			failures = 0
			if nudge != nil {
				nudge()
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// checkPrefix refuses to run a host whose runner name prefix (the first
// 8 characters of its id) another host of the fleet shares: each host
// tells its registrations from the others' by that prefix alone, so two
// such hosts could remove each other's runners. (With random ids it takes
// about a million hosts for a one-in-a-million chance.)
func (d *Daemon) checkPrefix(ctx context.Context) error {
	fl, ok := d.st.(store.Fleet)
	if !ok {
		return nil
	}
	hs, err := fl.FleetHosts(ctx)
	if err != nil {
		return fmt.Errorf("list the fleet's hosts: %w", err)
	}
	prefix := rm.RunnerNamePrefix(d.host.ID)
	for _, h := range hs {
		if h.ID != d.host.ID && strings.EqualFold(rm.RunnerNamePrefix(h.ID), prefix) {
			return fmt.Errorf("%w: host %s (%s) and this host %s (%s) share the runner name prefix %s, and would take each other's runners: stop this daemon, delete %s and start it again for a new host id",
				rm.ErrInvalid, h.Name, h.ID, d.host.Name, d.host.ID, prefix, d.dir.HostIDFile())
		}
	}
	return nil
}

// FindHost finds a host of the store by its id or its name (a name two
// hosts share must be given as an id). ErrNotFound names the hosts there
// are.
func FindHost(ctx context.Context, st store.Store, ref string) (rm.Host, error) {
	hs, err := st.Hosts(ctx)
	if err != nil {
		return rm.Host{}, err
	}
	var byName []rm.Host
	for _, h := range hs {
		if strings.EqualFold(h.ID.String(), ref) {
			return h, nil
		}
		if h.Name == ref {
			byName = append(byName, h)
		}
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		known := make([]string, 0, len(hs))
		for _, h := range hs {
			known = append(known, h.Name+" ("+h.ID.String()+")")
		}
		return rm.Host{}, fmt.Errorf("no host %q in the store (the hosts are %s): a host is known once its daemon ran against this store: %w",
			ref, strings.Join(known, ", "), store.ErrNotFound)
	}
	ids := make([]string, 0, len(byName))
	for _, h := range byName {
		ids = append(ids, h.ID.String())
	}
	return rm.Host{}, fmt.Errorf("%w: %d hosts are named %q: give one's id (%s)", rm.ErrInvalid, len(byName), ref, strings.Join(ids, ", "))
}
