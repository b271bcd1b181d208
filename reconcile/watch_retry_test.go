package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestWatchRetriesWithinRetryMax: a demand watch that returns what it
// cannot repair (credentials refused) for ten minutes is started again no
// more than WatchRetryMax apart, however long the failure lasts, so
// credentials restored are served within it; and at least BackoffBase/2
// apart (no storm).
func TestWatchRetriesWithinRetryMax(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) {
		c.BackoffBase, c.BackoffMax = time.Second, 2*time.Minute
	})
	synctest.Test(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			starts []time.Time
		)
		began := time.Now()
		restored := began.Add(10 * time.Minute)
		e.target.watch = func(ctx context.Context, _ func() int, report func(rm.Demand)) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			if time.Now().Before(restored) {
				return fmt.Errorf("poll: %w: revoked", rm.ErrUnauthorized)
			}
			report(rm.Demand{At: time.Now()})
			<-ctx.Done()
			return nil
		}
		cfg := e.cfg
		cfg.Now = time.Now
		_, stop := runLoop(t, cfg)
		time.Sleep(11 * time.Minute)
		synctest.Wait()
		stop()

		mu.Lock()
		defer mu.Unlock()
		require.Greater(t, len(starts), 2)
		last := starts[len(starts)-1]
		assert.False(t, last.Before(restored), "the watch runs again after the restore")
		assert.LessOrEqual(t, last.Sub(restored), reconcile.WatchRetryMax, "served within WatchRetryMax of the restore")
		for i := 1; i < len(starts); i++ {
			gap := starts[i].Sub(starts[i-1])
			assert.LessOrEqual(t, gap, reconcile.WatchRetryMax, "start %d", i)
			assert.GreaterOrEqual(t, gap, cfg.BackoffBase/2, "start %d", i)
		}
		t.Logf("%d starts in %s", len(starts), last.Sub(began))
	})
}
