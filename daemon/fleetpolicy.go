package daemon

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/fleetdemand"
	"github.com/runner-manager/runner-manager/meter/fleetweights"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// FleetSessionOwner is the owner name of a fleet policy's message session:
// one for every host, so that the host that takes the fleet's lease over
// deletes the session a dead holder left (the journal records it, under
// this owner and no host).
const FleetSessionOwner = "runner-manager-fleet"

// FleetConfig tunes fleet policies (tests shorten it; the defaults are
// fleetdemand's).
type FleetConfig struct {
	// LeaseTTL is how long a fleet lease runs unrenewed; Resync how often
	// a host reads its share without a notice; Stale how long a host may
	// go unheard before no job is placed on it.
	LeaseTTL, Resync, Stale time.Duration
}

// fleetSource wraps a fleet policy's scale-set target in the source that
// holds the fleet's lease and shares its jobs out.
func (t *targets) fleetSource(p rm.Policy, session rm.DemandSource) (rm.DemandSource, error) {
	sets, ok := t.st.(store.FleetSets)
	if !ok {
		return nil, fmt.Errorf("policy %q is the fleet's, and this journal is one host's (SQLite): a fleet policy needs the fleet's PostgreSQL journal ([store] url; docs/fleet.md)", p.Name)
	}
	fleet, ok := t.st.(store.Fleet)
	if !ok {
		return nil, fmt.Errorf("policy %q is the fleet's, and this journal keeps no fleet", p.Name)
	}
	stale := cmp.Or(t.fleet.Stale, status.StaleAfter(t.heartbeat))
	return fleetdemand.New(fleetdemand.Config{
		Policy: p.ID, Host: t.host.ID, Sets: sets, Session: session,
		Journal: fleetJournal{Store: t.st, Fleet: fleet},
		Weigh:   t.weigh.of,
		TTL:     t.fleet.LeaseTTL, Resync: t.fleet.Resync, Stale: stale,
		Logger: t.log.With("policy", p.Name),
	})
}

// fleetJournal is what a fleet source reads of the journal.
type fleetJournal struct {
	store.Store
	store.Fleet
}

// FleetHosts implements fleetdemand.Journal.
func (j fleetJournal) FleetHosts(ctx context.Context) ([]store.FleetHost, error) {
	return j.Fleet.FleetHosts(ctx)
}

// jobWeigher is a waiting job's expected peak: the p90 of its own newest
// runs across the fleet plus 10 %, else what admission expects of its
// policy. A job's figure is read at most every five minutes.
type jobWeigher struct {
	fleet    store.Fleet
	expected func(rm.Policy) uint64

	mu    sync.Mutex
	cache map[store.JobKey]weighed
}

type weighed struct {
	peak uint64
	at   time.Time
}

func (w *jobWeigher) of(ctx context.Context, p rm.Policy, j rm.PendingJob) uint64 {
	fallback := uint64(0)
	if w.expected != nil {
		fallback = w.expected(p)
	}
	if w.fleet == nil || j.Name == "" {
		return fallback
	}
	key := store.JobKey{Repository: fleetweights.RepositoryOf(p, rm.Job{Workflow: j.Workflow}), Workflow: j.Workflow, Name: j.Name}
	if key.Repository == "" {
		key.Repository = j.Repository
	}
	w.mu.Lock()
	c, ok := w.cache[key]
	w.mu.Unlock()
	if !ok || time.Since(c.at) > 5*time.Minute {
		c = weighed{at: time.Now()}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ws, err := w.fleet.Weights(rctx, store.WeightFilter{Job: key, Newest: 20})
		cancel()
		if err == nil && ws.Count > 0 && ws.PeakRSSP90 > 0 {
			c.peak = ws.PeakRSSP90 + ws.PeakRSSP90/10
			if c.peak < ws.PeakRSSP90 {
				c.peak = math.MaxUint64
			}
		}
		w.mu.Lock()
		if w.cache == nil {
			w.cache = map[store.JobKey]weighed{}
		}
		w.cache[key] = c
		w.mu.Unlock()
	}
	if c.peak == 0 {
		return fallback
	}
	return c.peak
}
