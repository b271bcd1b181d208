package fleetdemand

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
	"github.com/runner-manager/runner-manager/store"
)

// errLeaseLost ends a hold: another host took the lease, or this one
// could not renew it in time.
var errLeaseLost = errors.New("the fleet lease was lost")

// elect takes the lease whenever it is free and holds it; it returns when
// ctx is done (nil) or the session's watch fails for good.
func (s *Source) elect(ctx context.Context, k kicks) error {
	pace := backoff.Policy{Base: 500 * time.Millisecond, Cap: 10 * time.Second}
	// suspect is a holder whose lease this host took over on expiry: it
	// died or lost the journal, so nothing is placed on it until it is
	// heard from again.
	var suspect rm.HostID
	var suspectSince time.Time
	for try := 0; ctx.Err() == nil; {
		asked := time.Now()
		l, err := s.cfg.Sets.AcquireFleetLease(ctx, s.cfg.Policy, s.cfg.Host, s.cfg.TTL)
		var held *store.FleetLeaseHeldError
		switch {
		case errors.As(err, &held):
			try = 0
			if held.Lease.Holder != suspect {
				suspect, suspectSince = held.Lease.Holder, time.Time{}
			}
			// Wake when it would expire unrenewed, or when it is given up.
			wait := max(held.Lease.Left, 0) + 100*time.Millisecond
			select {
			case <-ctx.Done():
			case <-k.lease:
			case <-time.After(wait):
			}
			continue
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			s.setWaiting(fmt.Errorf("the fleet's journal does not answer: %w", err))
			s.log.Warn("cannot take the fleet lease; retrying", "err", err)
			try++
			sleep(ctx, pace.Wait(try))
			continue
		}
		try = 0
		s.setWaiting(nil)
		if suspect == s.cfg.Host {
			suspect = rm.HostID{}
		}
		if !suspect.IsZero() && suspectSince.IsZero() {
			suspectSince = time.Now()
		}
		s.log.Info("holding the fleet's scale set", "token", l.Token, "took_over_from", suspect.String())
		err = s.hold(ctx, l, asked, k, suspect, suspectSince)
		s.mu.Lock()
		s.holding = false
		s.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errLeaseLost):
			s.log.Warn("stopped serving the fleet's scale set", "reason", err.Error())
			suspect = rm.HostID{}
		case err != nil:
			// The session failed for good (credentials, the scale set
			// gone): give the lease up and let the loop retry the watch.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = s.cfg.Sets.ReleaseFleetLease(rctx, l)
			cancel()
			return err
		}
	}
	return nil
}

// holder is one hold's state: the lease as last renewed and what the
// session last said.
type holder struct {
	s        *Source
	capacity atomic.Int64

	mu    sync.Mutex
	lease store.FleetLease

	last    rm.Demand
	written []store.FleetShare
	// wrote wakes this host's own share reader after shares were written:
	// its listener may be down (it listens again with backoff after an
	// outage), and its notice is all that would wake it before the resync.
	wrote    func()
	suspect  rm.HostID
	since    time.Time
	hosts    []store.FleetHost
	hostsAt  time.Time
	rooms    []store.FleetRoom
	pending  []rm.JobEvent
	policy   rm.Policy
	policyAt time.Time
	shorts   map[rm.HostID]short
}

// hold serves the fleet's scale set while the lease holds: it renews the
// lease, watches the session with the fleet's capacity, and shares each
// demand figure out. asked is when the lease was asked for: its Left runs
// from then on this host's clock.
func (s *Source) hold(ctx context.Context, l store.FleetLease, asked time.Time, k kicks, suspect rm.HostID, since time.Time) error {
	ctx, stop := context.WithCancelCause(ctx)
	h := &holder{s: s, lease: l, suspect: suspect, since: since, wrote: func() { kick(k.share) }}
	s.mu.Lock()
	s.lease, s.holding = l, true
	s.mu.Unlock()

	var wg sync.WaitGroup
	// The renewal and the session's watch end with the hold, whatever
	// ended it (a fenced write, the watch failing, the lease lost).
	defer func() { stop(nil); wg.Wait() }()
	wg.Go(func() { h.renew(ctx, stop, asked) })

	demand := make(chan rm.Demand, 1)
	if err := h.refresh(ctx, true); err != nil && ctx.Err() == nil {
		s.log.Warn("cannot read the fleet's rooms", "err", err)
	}
	watched := make(chan error, 1)
	wg.Go(func() {
		watched <- s.cfg.Session.Watch(ctx, func() int { return int(h.capacity.Load()) }, func(d rm.Demand) {
			// The newest figure wins; its events are kept.
			for {
				select {
				case demand <- d:
					return
				case old := <-demand:
					d.Events = append(old.Events, d.Events...)
				}
			}
		})
	})
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	handBack := time.NewTimer(time.Hour)
	defer handBack.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err = <-watched:
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if err == nil {
				err = errors.New("the scale set's session ended")
			}
			return err
		case d := <-demand:
			h.mu.Lock()
			h.last = d
			h.pending = append(h.pending, d.Events...)
			h.mu.Unlock()
			err = h.share(ctx, false)
		case <-k.holder:
			err = h.share(ctx, true)
		case <-retry.C:
			err = h.share(ctx, true)
		case <-handBack.C:
			err = h.share(ctx, true)
		}
		h.mu.Lock()
		next, due := h.nextHandBack(time.Now())
		h.mu.Unlock()
		if due {
			handBack.Reset(next + 10*time.Millisecond)
		}
		switch {
		case errors.Is(err, store.ErrFenced):
			return fmt.Errorf("%w: %w", errLeaseLost, err)
		case err != nil && ctx.Err() == nil:
			s.log.Warn("cannot share the fleet's jobs out; retrying", "err", err)
			retry.Reset(time.Second)
		}
	}
}

// renew renews the lease every TTL/2 and stops the hold when another host
// took it, or a margin before it would expire unrenewed. A renewal that
// fails is tried again after renewRetry, not a period later: with the
// margin at TTL/4, the next period would already be past the deadline.
func (h *holder) renew(ctx context.Context, stop context.CancelCauseFunc, asked time.Time) {
	s := h.s
	margin := s.cfg.TTL / 4
	h.mu.Lock()
	deadline := asked.Add(h.lease.Left - margin)
	h.mu.Unlock()
	next := time.NewTimer(s.cfg.TTL / 2)
	defer next.Stop()
	for {
		expire := time.NewTimer(time.Until(deadline))
		select {
		case <-ctx.Done():
			expire.Stop()
			return
		case <-expire.C:
			stop(fmt.Errorf("%w: not renewed in time (the journal does not answer)", errLeaseLost))
			return
		case <-next.C:
		}
		expire.Stop()
		asked := time.Now()
		rctx, cancel := context.WithDeadline(ctx, deadline)
		l, err := s.cfg.Sets.AcquireFleetLease(rctx, s.cfg.Policy, s.cfg.Host, s.cfg.TTL)
		cancel()
		var held *store.FleetLeaseHeldError
		switch {
		case errors.As(err, &held):
			stop(fmt.Errorf("%w: host %s holds it", errLeaseLost, held.Lease.Holder))
			return
		case err != nil:
			if ctx.Err() == nil {
				s.log.Warn("cannot renew the fleet lease; retrying until it would expire", "err", err, "stop_in", time.Until(deadline).Round(time.Millisecond))
			}
			next.Reset(min(renewRetry, s.cfg.TTL/8))
			continue
		}
		h.mu.Lock()
		if l.Token != h.lease.Token {
			h.mu.Unlock()
			stop(fmt.Errorf("%w: taken again under a new token", errLeaseLost))
			return
		}
		h.lease = l
		h.mu.Unlock()
		deadline = asked.Add(l.Left - margin)
		next.Reset(s.cfg.TTL / 2)
	}
}

// renewRetry is how soon a failed renewal is tried again.
const renewRetry = 250 * time.Millisecond

// refresh reads the rooms (and, at most every 10 s, the hosts' heartbeats
// and the policy) and sets the capacity told to GitHub.
func (h *holder) refresh(ctx context.Context, force bool) error {
	s := h.s
	now := time.Now()
	h.mu.Lock()
	needHosts := force || now.Sub(h.hostsAt) > 10*time.Second
	needPolicy := force || now.Sub(h.policyAt) > 10*time.Second
	h.mu.Unlock()
	if needPolicy {
		p, err := s.cfg.Journal.Policy(ctx, s.cfg.Policy)
		if err != nil {
			return fmt.Errorf("read the fleet policy: %w", err)
		}
		h.mu.Lock()
		h.policy, h.policyAt = p, now
		h.mu.Unlock()
	}
	rooms, err := s.cfg.Sets.FleetRooms(ctx, s.cfg.Policy)
	if err != nil {
		return fmt.Errorf("read the fleet's rooms: %w", err)
	}
	// A host that joined since the heartbeats were read would be taken
	// for one gone, and its runners' events dropped: read them again.
	h.mu.Lock()
	needHosts = needHosts || slices.ContainsFunc(rooms, func(r store.FleetRoom) bool {
		return !slices.ContainsFunc(h.hosts, func(fh store.FleetHost) bool { return fh.ID == r.Host })
	})
	h.mu.Unlock()
	if needHosts {
		hosts, err := s.cfg.Journal.FleetHosts(ctx)
		if err != nil {
			return fmt.Errorf("read the fleet's hosts: %w", err)
		}
		h.mu.Lock()
		h.hosts, h.hostsAt = hosts, now
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.rooms = rooms
	h.tell(h.split(now))
	h.mu.Unlock()
	return nil
}

// tell sets the capacity told to GitHub by the hosts as split (h.mu
// held).
func (h *holder) tell(live, gone []store.FleetRoom) {
	max := h.policy.Max
	if h.policy.Paused {
		max = 0
	}
	h.capacity.Store(int64(Capacity(max, live, gone)))
}

// split parts the rooms into hosts heard from and hosts gone quiet or
// handed back (h.mu held).
func (h *holder) split(now time.Time) (live, gone []store.FleetRoom) {
	seen := make(map[rm.HostID]store.FleetHost, len(h.hosts))
	for _, fh := range h.hosts {
		seen[fh.ID] = fh
	}
	for _, r := range h.rooms {
		fh, ok := seen[r.Host]
		quiet := !ok || fh.Stale(now, h.s.cfg.Stale) ||
			r.Host == h.suspect && !fh.SeenAt.After(h.since)
		// This host is not gone to itself, though it may fail to start
		// what it was given as any host may.
		if quiet && r.Host != h.s.cfg.Host || h.handBack(r, now) {
			gone = append(gone, r)
		} else {
			live = append(live, r)
		}
	}
	return live, h.boundGone(live, gone)
}

// boundGone caps the jobs the rooms of hosts gone quiet count as running
// by what GitHub says runs, less what the live hosts run. A host cut from
// the journal keeps the last room it published, and its runners finish
// their jobs meanwhile: counted at that room it would hold the fleet's
// jobs from the live hosts until it came back. A live host's room that
// lags its runners errs the other way for a pass (h.mu held).
func (h *holder) boundGone(live, gone []store.FleetRoom) []store.FleetRoom {
	if !h.last.RunningCounted || len(gone) == 0 {
		return gone
	}
	left := h.last.Running
	for _, r := range live {
		left -= r.Busy
	}
	left = max(left, 0)
	out := slices.Clone(gone)
	for i := range out {
		out[i].Busy = min(out[i].Busy, left)
		left -= out[i].Busy
	}
	return out
}

// share places the last demand figure over the hosts and writes the
// shares (when they changed) and the job events under the lease.
func (h *holder) share(ctx context.Context, rooms bool) error {
	s := h.s
	h.mu.Lock()
	_, unknown := h.route(h.pending)
	h.mu.Unlock()
	// An event of a runner no host known is named by a host that joined
	// since the heartbeats were read: read them, rather than drop it.
	force := rooms || unknown > 0
	if err := h.refresh(ctx, force); err != nil && force {
		return err
	}
	h.mu.Lock()
	d, pol, lease := h.last, h.policy, h.lease
	live, gone := h.split(time.Now())
	h.tell(live, gone) // a host handed back just now has no room
	events, _ := h.route(h.pending)
	written := h.written
	h.mu.Unlock()
	spares := pol.Spares()
	if pol.Paused {
		spares = 0
	}
	shares := Place(Ask{Policy: s.cfg.Policy, Wanted: d.Wanted, Spares: spares, Pending: d.Pending, Rooms: live, Gone: gone,
		Weigh: func(j rm.PendingJob) uint64 {
			if s.cfg.Weigh == nil {
				return 0
			}
			return s.cfg.Weigh(ctx, pol, j)
		}})
	if written != nil && len(events) == 0 && sameShares(shares, written) {
		return nil
	}
	if err := s.cfg.Sets.ShareFleetDemand(ctx, lease, shares, events); err != nil {
		return err
	}
	h.mu.Lock()
	h.written = shares
	h.pending = h.pending[:0]
	h.tell(h.split(time.Now())) // start the clock of each host now short
	h.mu.Unlock()
	if h.wrote != nil {
		h.wrote()
	}
	return nil
}

// route addresses each job event to the host whose runner it names (by
// the runner's name: rm-<host>-<attempt>), and counts those that name no
// host known; those are dropped (h.mu held).
func (h *holder) route(events []rm.JobEvent) (out []store.FleetEvent, unknown int) {
	for _, e := range events {
		if e.RunnerName == "" {
			continue
		}
		found := false
		for _, fh := range h.hosts {
			if strings.HasPrefix(e.RunnerName, rm.RunnerNamePrefix(fh.ID)) {
				out = append(out, store.FleetEvent{Host: fh.ID, Event: e})
				found = true
				break
			}
		}
		if !found {
			unknown++
		}
	}
	return out, unknown
}
