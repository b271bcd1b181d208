package reconcile

import (
	"context"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// liveCacheMaxAge bounds how old the host's live attempts may be when the
// meters, admission or the supervisor's refresh are given them from the
// cache: every write of this host's attempts goes through the cache and
// drops it, so the bound only covers rows another process changed.
const liveCacheMaxAge = 30 * time.Second

// liveCache is the journal as a supervisor and its loops use it. Every
// write passes through and drops the cached live attempts of the host
// (its attempts are written by this supervisor's loops alone); the loops'
// passes read them fresh and leave the result here; the meters' sampling
// (every 2 s), admission and the policy refresh (every 5 s) are given the
// cached list while it is valid. On an idle host with 10 policies that
// turned about 50 reads a minute into none.
type liveCache struct {
	store.Store
	host rm.HostID

	mu     sync.Mutex
	gen    uint64 // bumped by every write
	valid  bool
	at     time.Time
	cached []rm.Attempt
}

func newLiveCache(st store.Store, host rm.HostID) *liveCache {
	return &liveCache{Store: st, host: host}
}

// LiveAttempts reads the journal, and keeps this host's answer.
func (c *liveCache) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	atts, err := c.Store.LiveAttempts(ctx, host)
	if err != nil || host != c.host {
		return atts, err
	}
	c.mu.Lock()
	if c.gen == gen { // no write since the read began: the answer holds
		c.valid, c.at, c.cached = true, time.Now(), slices.Clone(atts)
	}
	c.mu.Unlock()
	return atts, nil
}

// cachedLive is the host's live attempts from the cache while it is valid
// and young, else from the journal.
func (c *liveCache) cachedLive(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	if host == c.host {
		c.mu.Lock()
		if c.valid && time.Since(c.at) < liveCacheMaxAge {
			out := slices.Clone(c.cached)
			c.mu.Unlock()
			return out, nil
		}
		c.mu.Unlock()
	}
	return c.LiveAttempts(ctx, host)
}

func (c *liveCache) drop() {
	c.mu.Lock()
	c.gen++
	c.valid, c.cached = false, nil
	c.mu.Unlock()
}

// The writes that change which attempts are live, or whose.

func (c *liveCache) RecordAttempt(ctx context.Context, a rm.Attempt) error {
	defer c.drop()
	return c.Store.RecordAttempt(ctx, a)
}

func (c *liveCache) ForceAttempt(ctx context.Context, a rm.Attempt) error {
	defer c.drop()
	return c.Store.ForceAttempt(ctx, a)
}

func (c *liveCache) InsertPolicy(ctx context.Context, p rm.Policy) error {
	defer c.drop()
	return c.Store.InsertPolicy(ctx, p)
}

func (c *liveCache) UpdatePolicy(ctx context.Context, p rm.Policy) error {
	defer c.drop()
	return c.Store.UpdatePolicy(ctx, p)
}

func (c *liveCache) DeletePolicy(ctx context.Context, id rm.PolicyID) error {
	defer c.drop()
	return c.Store.DeletePolicy(ctx, id)
}

func (c *liveCache) PurgePolicy(ctx context.Context, id rm.PolicyID) error {
	defer c.drop()
	return c.Store.PurgePolicy(ctx, id)
}

func (c *liveCache) MovePolicy(ctx context.Context, id rm.PolicyID, to rm.HostID) error {
	defer c.drop()
	return c.Store.MovePolicy(ctx, id, to)
}

func (c *liveCache) ApplyPolicies(ctx context.Context, ch store.PolicyChanges) error {
	defer c.drop()
	return c.Store.ApplyPolicies(ctx, ch)
}

// cachedView is the store as the meters see it: the host's live attempts
// from the cache.
type cachedView struct{ *liveCache }

func (v cachedView) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	return v.cachedLive(ctx, host)
}

// liveAttemptsOf is st's live attempts of host, from its cache when st is
// a supervisor's journal.
func liveAttemptsOf(ctx context.Context, st store.Store, host rm.HostID) ([]rm.Attempt, error) {
	if c, ok := st.(*liveCache); ok {
		return c.cachedLive(ctx, host)
	}
	return st.LiveAttempts(ctx, host)
}
