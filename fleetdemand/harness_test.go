package fleetdemand_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/fleetdemand"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// wait is how long a condition may take to hold: generous, for a loaded
// machine.
const wait = 20 * time.Second

// fleet is one fleet policy over a real database, served by hosts each
// with a store of its own (a pool of its own, as another machine has).
type fleet struct {
	t      *testing.T
	url    string
	policy rm.Policy
	// watching counts the sessions watching now, over every host; over
	// counts each time a session began to watch beside another.
	watching, over atomic.Int32
}

// newFleet inserts a fleet policy of max into the database of url.
func newFleet(t *testing.T, url string, max int) *fleet {
	f := &fleet{t: t, url: url}
	s := f.open()
	f.policy = storetest.NewPolicy().Autoscale("fleet-"+rm.NewPolicyID().String()[:8], max).Fleet().Build()
	require.NoError(t, s.InsertPolicy(t.Context(), f.policy))
	return f
}

func (f *fleet) open() *postgres.Store {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, f.url)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = s.Close() })
	return s
}

// tlog writes a source's log to its test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) { w.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

// errCut is what a host cut from the journal gets from every call.
var errCut = errors.New("injected: the journal does not answer")

// cutSets is a host's fleet sets behind a switch that fails every call,
// recording when each lease was taken and every try to take it.
type cutSets struct {
	store.FleetSets
	cut *atomic.Bool
	// deaf fails ListenFleet alone: the host hears no notice.
	deaf atomic.Bool

	mu     sync.Mutex
	leases []taken
	tries  []try
}

// try is one call to take the lease: when it was asked and answered, and
// the lease taken or the one held by another host (with its time left).
type try struct {
	asked, answered time.Time
	lease           store.FleetLease
	took, held      bool
}

// triesAskedAfter are the tries to take the lease asked after t, and the
// one before the first of them, if any.
func (c *cutSets) triesAskedAfter(t time.Time) (before *try, after []try) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, tr := range c.tries {
		if tr.asked.After(t) {
			if i > 0 {
				b := c.tries[i-1]
				before = &b
			}
			return before, slices.Clone(c.tries[i:])
		}
	}
	return nil, nil
}

// taken is a lease this host got, and when the answer came.
type taken struct {
	lease store.FleetLease
	at    time.Time
}

func (c *cutSets) AcquireFleetLease(ctx context.Context, p rm.PolicyID, h rm.HostID, ttl time.Duration) (store.FleetLease, error) {
	if c.cut.Load() {
		return store.FleetLease{}, errCut
	}
	asked := time.Now()
	l, err := c.FleetSets.AcquireFleetLease(ctx, p, h, ttl)
	tr := try{asked: asked, answered: time.Now(), lease: l, took: err == nil}
	var held *store.FleetLeaseHeldError
	if errors.As(err, &held) {
		tr.lease, tr.held = held.Lease, true
	}
	c.mu.Lock()
	if err == nil {
		c.leases = append(c.leases, taken{l, tr.answered})
	}
	c.tries = append(c.tries, tr)
	c.mu.Unlock()
	return l, err
}

// firstTake is when this host first got a lease of token, if it did.
func (c *cutSets) firstTake(token int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tk := range c.leases {
		if tk.lease.Token == token {
			return tk.at, true
		}
	}
	return time.Time{}, false
}

func (c *cutSets) ReleaseFleetLease(ctx context.Context, l store.FleetLease) error {
	if c.cut.Load() {
		return errCut
	}
	return c.FleetSets.ReleaseFleetLease(ctx, l)
}

func (c *cutSets) FleetLease(ctx context.Context, p rm.PolicyID) (store.FleetLease, error) {
	if c.cut.Load() {
		return store.FleetLease{}, errCut
	}
	return c.FleetSets.FleetLease(ctx, p)
}

func (c *cutSets) PublishFleetRoom(ctx context.Context, r store.FleetRoom) error {
	if c.cut.Load() {
		return errCut
	}
	return c.FleetSets.PublishFleetRoom(ctx, r)
}

func (c *cutSets) FleetRooms(ctx context.Context, p rm.PolicyID) ([]store.FleetRoom, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.FleetSets.FleetRooms(ctx, p)
}

func (c *cutSets) ShareFleetDemand(ctx context.Context, l store.FleetLease, sh []store.FleetShare, ev []store.FleetEvent) error {
	if c.cut.Load() {
		return errCut
	}
	return c.FleetSets.ShareFleetDemand(ctx, l, sh, ev)
}

func (c *cutSets) TakeFleetShare(ctx context.Context, p rm.PolicyID, h rm.HostID) (store.FleetShare, []rm.JobEvent, error) {
	if c.cut.Load() {
		return store.FleetShare{}, nil, errCut
	}
	return c.FleetSets.TakeFleetShare(ctx, p, h)
}

func (c *cutSets) ListenFleet(ctx context.Context) (<-chan store.FleetNotice, error) {
	if c.cut.Load() || c.deaf.Load() {
		return nil, errCut
	}
	return c.FleetSets.ListenFleet(ctx)
}

// cutJournal is a host's journal behind the same switch.
type cutJournal struct {
	s   *postgres.Store
	cut *atomic.Bool
}

func (j cutJournal) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	if j.cut.Load() {
		return rm.Policy{}, errCut
	}
	return j.s.Policy(ctx, id)
}

func (j cutJournal) FleetHosts(ctx context.Context) ([]store.FleetHost, error) {
	if j.cut.Load() {
		return nil, errCut
	}
	return j.s.FleetHosts(ctx)
}

// session is the scale set's message session, faked at its boundary: it
// reports the figures fed to it while it watches and keeps the capacity
// it was told.
type session struct {
	f *fleet

	mu        sync.Mutex
	watching  bool
	max       func() int
	report    func(rm.Demand)
	stoppedAt time.Time
	closed    int
}

func (s *session) Watch(ctx context.Context, max func() int, report func(rm.Demand)) error {
	if s.f.watching.Add(1) > 1 {
		s.f.over.Add(1)
	}
	s.mu.Lock()
	s.watching, s.max, s.report = true, max, report
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.watching, s.stoppedAt = false, time.Now()
	s.mu.Unlock()
	s.f.watching.Add(-1)
	return nil
}

func (s *session) Waiting() (error, time.Time) { return nil, time.Time{} }

func (s *session) Close(context.Context) error {
	s.mu.Lock()
	s.closed++
	s.mu.Unlock()
	return nil
}

// Watching reports whether the session watches now.
func (s *session) Watching() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watching
}

// Max is the capacity last told to GitHub, -1 while not watching.
func (s *session) Max() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.watching {
		return -1
	}
	return s.max()
}

// Feed reports d as GitHub's, if the session watches.
func (s *session) Feed(d rm.Demand) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.watching {
		return false
	}
	s.report(d)
	return true
}

// host is one host serving the fleet: its source, its fake session and a
// fake loop that keeps what the source reported.
type host struct {
	f    *fleet
	id   rm.HostID
	st   *postgres.Store
	cut  atomic.Bool
	sets *cutSets
	sess *session
	src  *fleetdemand.Source

	stop context.CancelFunc
	done chan struct{} // closed when the watch returned err
	err  error

	room   rm.Room // as first observed
	serves bool    // the loop observes a room after each share

	mu      sync.Mutex
	demands []rm.Demand
}

// addHost registers a host, publishes room as its loop would and starts
// its source's watch with cfg's figures (TTL and the like). Its loop
// observes no room after.
func (f *fleet) addHost(cfg fleetdemand.Config, room rm.Room) *host {
	f.t.Helper()
	return f.add(cfg, room, false, false)
}

// addServing is addHost with a loop that serves each share it is given
// at once: after each, it observes room with as many runners starting as
// the share wants.
func (f *fleet) addServing(cfg fleetdemand.Config, room rm.Room) *host {
	f.t.Helper()
	return f.add(cfg, room, true, false)
}

// addDeaf is addHost for a host that hears no notice (its listener never
// connects): only its resync, or a kick of its own, reads its share.
func (f *fleet) addDeaf(cfg fleetdemand.Config, room rm.Room) *host {
	f.t.Helper()
	return f.add(cfg, room, false, true)
}

func (f *fleet) add(cfg fleetdemand.Config, room rm.Room, serves, deaf bool) *host {
	f.t.Helper()
	h := &host{f: f, id: rm.NewHostID(), st: f.open()}
	h.sess = &session{f: f}
	require.NoError(f.t, h.st.RegisterHost(f.t.Context(), store.FleetHost{Host: storetest.NewHost().ID(h.id).Name("host-" + h.id.String()[:8]).SeenAt(time.Now()).Build()}))
	h.sets = &cutSets{FleetSets: h.st, cut: &h.cut}
	h.sets.deaf.Store(deaf)
	cfg.Policy, cfg.Host, cfg.Sets, cfg.Journal, cfg.Session = f.policy.ID, h.id, h.sets, cutJournal{s: h.st, cut: &h.cut}, h.sess
	cfg.Logger = slog.New(slog.NewTextHandler(tlog{f.t}, nil)).With("host", h.id.String()[:8])
	src, err := fleetdemand.New(cfg)
	require.NoError(f.t, err)
	h.src, h.room, h.serves = src, room, serves
	h.src.ObserveRoom(room)
	h.start()
	return h
}

// start runs the source's watch as the host's loop would.
func (h *host) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.err = h.src.Watch(ctx, func() int { return 0 }, func(d rm.Demand) {
			h.mu.Lock()
			h.demands = append(h.demands, d)
			h.mu.Unlock()
			if h.serves {
				r := h.room
				r.Idle = max(d.Wanted-r.Busy, 0)
				h.src.ObserveRoom(r)
			}
		})
	}()
	h.f.t.Cleanup(h.kill)
}

// kill ends the watch without Close, as a host killed would.
func (h *host) kill() {
	h.stop()
	select {
	case <-h.done:
		require.NoError(h.f.t, h.err)
	case <-time.After(wait):
		buf := make([]byte, 1<<20)
		h.f.t.Errorf("host %s: the watch did not end:\n%s", h.id, buf[:runtime.Stack(buf, true)])
	}
}

// last is the last demand the host's loop was given.
func (h *host) last() (rm.Demand, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.demands) == 0 {
		return rm.Demand{}, false
	}
	return h.demands[len(h.demands)-1], true
}

// events is every job event the host's loop was given.
func (h *host) events() []rm.JobEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []rm.JobEvent
	for _, d := range h.demands {
		out = append(out, d.Events...)
	}
	return out
}

// holder is the host whose session watches, when exactly one does.
func (f *fleet) holder(hosts ...*host) *host {
	var got *host
	for _, h := range hosts {
		if h.sess.Watching() {
			if got != nil {
				return nil
			}
			got = h
		}
	}
	return got
}

// awaitHolder waits for exactly one of hosts to watch and returns it.
func (f *fleet) awaitHolder(hosts ...*host) *host {
	f.t.Helper()
	var got *host
	require.Eventually(f.t, func() bool { got = f.holder(hosts...); return got != nil }, wait, 5*time.Millisecond, "no host holds the fleet's session")
	return got
}

// lease is the policy's lease as the database has it.
func (f *fleet) lease(s *postgres.Store) store.FleetLease {
	f.t.Helper()
	l, err := s.FleetLease(f.t.Context(), f.policy.ID)
	require.NoError(f.t, err)
	return l
}
