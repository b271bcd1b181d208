package fleetdemand

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
	"github.com/runner-manager/runner-manager/store"
)

// The lease's figures: a holder renews every TTL/2 and stops serving a
// margin before its lease would expire unrenewed, so that the next holder,
// which takes the lease only once it has expired on the database's clock,
// never serves beside it. A host killed mid-hold is replaced within TTL
// plus one try.
const (
	DefaultTTL      = 6 * time.Second
	DefaultResync   = 30 * time.Second
	DefaultStale    = 45 * time.Second
	DefaultHandBack = 20 * time.Second
)

// Journal is what the source reads of the journal besides the fleet sets:
// the policy (its max and spares may be edited while it runs) and the
// hosts' heartbeats.
type Journal interface {
	Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error)
	FleetHosts(ctx context.Context) ([]store.FleetHost, error)
}

// Config is one fleet policy's source on one host.
type Config struct {
	Policy  rm.PolicyID
	Host    rm.HostID
	Sets    store.FleetSets
	Journal Journal
	// Session is the scale set's own demand source, its message session:
	// only the lease's holder watches it. Close closes it.
	Session rm.DemandSource
	// Weigh is a waiting job's expected peak memory (its fleet weight,
	// else the policy's estimate); nil weighs nothing.
	Weigh func(ctx context.Context, p rm.Policy, j rm.PendingJob) uint64
	// TTL is the lease's length (DefaultTTL); Resync how often a host
	// reads its share without a notice (DefaultResync); Stale how long a
	// host may go unheard (its heartbeat) before nothing is placed on it
	// (DefaultStale).
	TTL, Resync, Stale time.Duration
	// HandBack is how long a host may show fewer runners than its share
	// wants, publishing no new room, before the holder places its jobs
	// elsewhere (DefaultHandBack).
	HandBack time.Duration
	Logger   *slog.Logger
}

// Source is a fleet policy's demand source on one host (rm.DemandSource,
// rm.RoomObserver).
type Source struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	room      rm.Room
	roomKnown bool
	lease     store.FleetLease // the last taken, held or not
	holding   bool
	waitErr   error
	waitSince time.Time

	roomKick chan struct{}
}

var (
	_ rm.DemandSource = (*Source)(nil)
	_ rm.RoomObserver = (*Source)(nil)
)

// New returns the source of cfg.
func New(cfg Config) (*Source, error) {
	switch {
	case cfg.Policy.IsZero(), cfg.Host.IsZero():
		return nil, errors.New("fleetdemand: a source needs its policy and host")
	case cfg.Sets == nil || cfg.Journal == nil || cfg.Session == nil:
		return nil, errors.New("fleetdemand: a source needs the fleet sets, the journal and the scale set's session")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Stale <= 0 {
		cfg.Stale = DefaultStale
	}
	if cfg.HandBack <= 0 {
		cfg.HandBack = DefaultHandBack
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Source{cfg: cfg, log: cfg.Logger.With("fleet_policy", cfg.Policy.String()), roomKick: make(chan struct{}, 1)}, nil
}

// ObserveRoom implements rm.RoomObserver: the loop's pass tells what this
// host runs and could take, and the source publishes it when it changed.
func (s *Source) ObserveRoom(r rm.Room) {
	s.mu.Lock()
	s.room, s.roomKnown = r, true
	s.mu.Unlock()
	kick(s.roomKick)
}

// Holding reports whether this host holds the fleet's lease now.
func (s *Source) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding
}

// Waiting implements rm.DemandSource: the session's reason while this
// host holds the lease, else why the fleet's journal does not answer.
func (s *Source) Waiting() (error, time.Time) {
	s.mu.Lock()
	holding, err, since := s.holding, s.waitErr, s.waitSince
	s.mu.Unlock()
	if holding {
		if werr, wsince := s.cfg.Session.Waiting(); werr != nil {
			return werr, wsince
		}
	}
	return err, since
}

func (s *Source) setWaiting(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.waitErr, s.waitSince = nil, time.Time{}
	case s.waitErr == nil:
		s.waitErr, s.waitSince = err, time.Now()
	default:
		s.waitErr = err
	}
}

// Close implements rm.DemandSource: it deletes the session if this host
// opened one, then gives the lease up, so that the next holder need not
// wait for it to expire.
func (s *Source) Close(ctx context.Context) error {
	err := s.cfg.Session.Close(ctx)
	// The loop's watch has ended by now, and with it the hold, so the
	// last lease taken is given up whether or not it still held: a
	// release under a token the database no longer has does nothing.
	s.mu.Lock()
	l := s.lease
	s.holding = false
	r := s.room
	s.mu.Unlock()
	// This host takes no more of the fleet's jobs; its busy runners still
	// count until they end.
	gone := store.FleetRoom{Policy: s.cfg.Policy, Host: s.cfg.Host, Busy: r.Busy, FreeMemory: store.FreeMemoryUnknown}
	if perr := s.cfg.Sets.PublishFleetRoom(ctx, gone); perr != nil && !errors.Is(perr, store.ErrNotFound) { // removed: nothing to leave
		err = errors.Join(err, fmt.Errorf("publish this host's leaving the fleet policy: %w", perr))
	}
	if l.Token > 0 {
		if rerr := s.cfg.Sets.ReleaseFleetLease(ctx, l); rerr != nil {
			err = errors.Join(err, fmt.Errorf("give the fleet lease up: %w", rerr))
		}
	}
	return err
}

// kicks wake the source's goroutines; each coalesces.
type kicks struct {
	share, holder, lease chan struct{}
}

func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Watch implements rm.DemandSource: it reports this host's share of the
// fleet's demand, publishes this host's room, and holds the fleet's lease
// (and the scale set's session) whenever it is free. maxCapacity is not
// read: the room the loop observes is this host's capacity.
func (s *Source) Watch(ctx context.Context, _ func() int, report func(rm.Demand)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := kicks{share: make(chan struct{}, 1), holder: make(chan struct{}, 1), lease: make(chan struct{}, 1)}
	kick(k.share)
	var wg sync.WaitGroup
	wg.Go(func() { s.listen(ctx, k) })
	wg.Go(func() { s.publish(ctx) })
	wg.Go(func() { s.readShares(ctx, k, report) })
	err := s.elect(ctx, k)
	cancel()
	wg.Wait()
	return err
}

// listen turns the journal's notices into kicks, listening again (with
// backoff) when its connection goes, and kicking every reader then: a
// notice may have been missed.
func (s *Source) listen(ctx context.Context, k kicks) {
	pace := backoff.Policy{Base: 500 * time.Millisecond, Cap: 15 * time.Second}
	for try := 0; ctx.Err() == nil; try++ {
		ch, err := s.cfg.Sets.ListenFleet(ctx)
		if err == nil {
			try = 0
			kick(k.share)
			kick(k.holder)
			kick(k.lease)
			for n := range ch {
				if n.Policy != s.cfg.Policy {
					continue
				}
				switch n.Kind {
				case store.FleetShareChanged:
					kick(k.share)
				case store.FleetRoomChanged:
					kick(k.holder)
				case store.FleetLeaseChanged:
					kick(k.lease)
				}
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("the fleet's notices stopped (database connection lost); listening again")
		} else if ctx.Err() == nil {
			s.log.Warn("cannot listen for the fleet's notices; retrying", "err", err)
		}
		if !sleep(ctx, pace.Wait(try)) {
			return
		}
	}
}

// publish writes this host's room whenever the loop's figures change (its
// memory by 64 MiB steps, so that a job's growth is not a write a pass).
func (s *Source) publish(ctx context.Context) {
	var last store.FleetRoom
	published := false
	pace := backoff.Policy{Base: time.Second, Cap: 15 * time.Second}
	for try := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-s.roomKick:
		}
		s.mu.Lock()
		r, known := s.room, s.roomKnown
		s.mu.Unlock()
		if !known {
			continue
		}
		room := store.FleetRoom{Policy: s.cfg.Policy, Host: s.cfg.Host, Capacity: r.Capacity, Busy: r.Busy, Idle: r.Idle,
			FreeMemory: store.FreeMemoryUnknown, WarmFree: r.WarmFree}
		if r.MemoryKnown {
			room.FreeMemory = r.FreeMemory &^ (64<<20 - 1)
		}
		if published && room == last {
			continue
		}
		// A statement cut off by ctx may still land after the watch
		// ended, over the room Close publishes: it runs to its end.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := s.cfg.Sets.PublishFleetRoom(wctx, room)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("cannot publish this host's room in the fleet; retrying", "err", err)
			try++
			if !sleep(ctx, pace.Wait(try)) {
				return
			}
			kick(s.roomKick)
			continue
		}
		try, last, published = 0, room, true
	}
}

// readShares reads this host's share on each notice (and every Resync
// without one) and reports it, with the job events the holder passed on.
func (s *Source) readShares(ctx context.Context, k kicks, report func(rm.Demand)) {
	tick := time.NewTicker(s.cfg.Resync)
	defer tick.Stop()
	var last store.FleetShare
	reported := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.share:
		case <-tick.C:
		}
		share, events, err := s.cfg.Sets.TakeFleetShare(ctx, s.cfg.Policy, s.cfg.Host)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.setWaiting(fmt.Errorf("the fleet's journal does not answer: %w", err))
			s.log.Warn("cannot read this host's share of the fleet's jobs; retrying", "err", err)
			if sleep(ctx, 2*time.Second) {
				kick(k.share)
			}
			continue
		}
		s.setWaiting(nil)
		if reported && len(events) == 0 && sameShare(share, last) {
			continue
		}
		last, reported = share, true
		pending := make([]rm.PendingJob, 0, len(share.Placed))
		for _, p := range share.Placed {
			pending = append(pending, p.Job)
		}
		report(rm.Demand{Wanted: share.Wanted, Spares: share.Spares, SparesShared: true, Events: events,
			Pending: pending, PendingListed: true, At: time.Now()})
	}
}

// sameShare reports whether two shares ask the same of their host.
func sameShare(a, b store.FleetShare) bool {
	if a.Wanted != b.Wanted || a.Spares != b.Spares || len(a.Placed) != len(b.Placed) {
		return false
	}
	for i := range a.Placed {
		if a.Placed[i].Job.ID != b.Placed[i].Job.ID || a.Placed[i].Why != b.Placed[i].Why {
			return false
		}
	}
	return true
}

// sameShares reports whether two sets of shares are the same.
func sameShares(a, b []store.FleetShare) bool {
	return slices.EqualFunc(a, b, func(x, y store.FleetShare) bool { return x.Host == y.Host && sameShare(x, y) })
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
