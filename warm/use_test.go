package warm_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/warm"
)

// used makes a slot of repo holding n bytes, given back.
func used(t *testing.T, p *warm.Pool, repo string, n int) rm.WarmSlot {
	t.Helper()
	s, a := lease(t, p, repo)
	write(t, filepath.Join(s.Dir, "data"), n)
	require.NoError(t, p.Release(a, false))
	return s
}

// Reclaim evicts free slots, least recently used first, until what was
// asked for is freed; a held slot stays, and what it freed is said.
func TestReclaim(t *testing.T) {
	p, _ := newPool(t)
	used(t, p, "octo/old", 256<<10)
	used(t, p, "octo/mid", 256<<10)
	heldSlot, holder := lease(t, p, "octo/held")
	write(t, filepath.Join(heldSlot.Dir, "data"), 256<<10)
	list, err := p.List()
	require.NoError(t, err)
	var old int64
	for _, s := range list {
		if s.Repo == "octo/old" {
			old = s.Bytes
		}
	}
	require.Positive(t, old)

	freed := p.Reclaim(1)
	assert.Equal(t, uint64(old), freed, "one byte asked: the least recently used slot goes, whole")
	names := func() []string {
		list, err := p.List()
		require.NoError(t, err)
		var out []string
		for _, s := range list {
			out = append(out, s.Name())
		}
		return out
	}
	assert.ElementsMatch(t, []string{"octo/mid#1", "octo/held#1"}, names())

	assert.Positive(t, p.Reclaim(1<<40), "more than there is: every free slot goes")
	assert.Equal(t, []string{"octo/held#1"}, names(), "a held slot is never evicted")
	assert.Zero(t, p.Reclaim(1<<40), "nothing free left")
	require.NoError(t, p.Release(holder, false))
}

func TestSummary(t *testing.T) {
	p, _ := newPool(t, warm.WithCap(1<<30))
	_, a := lease(t, p, "octo/app") // slot 1, held
	used(t, p, "octo/app", 4096)    // slot 2
	used(t, p, "octo/app", 4096)    // slot 2 again: a hit
	used(t, p, "octo/web", 4096)
	st, err := p.Status()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), st.CapBytes)
	assert.Equal(t, 3, st.Slots)
	require.Len(t, st.Repos, 2)
	web, app := st.Repos[0], st.Repos[1]
	assert.Equal(t, "octo/web", web.Repo, "most recently used first")
	assert.Equal(t, "octo/app", app.Repo)
	assert.Equal(t, 2, app.Slots)
	assert.Equal(t, 1, app.Held)
	assert.Equal(t, 3, app.Uses)
	assert.Equal(t, 1, app.Hits)
	assert.Equal(t, "native", app.Backend)
	assert.Equal(t, st.Bytes, web.Bytes+app.Bytes)
	require.NoError(t, p.Release(a, false))
}

// HoldLive holds the slots the journal's live attempts name, so that an
// eviction leaves them; Exclusive does it under the data directory's
// lock, and refuses while a daemon holds that.
func TestExclusiveHoldsLiveAttemptsSlots(t *testing.T) {
	p, d := newPool(t)
	used(t, p, "octo/app", 4096)
	used(t, p, "octo/web", 4096)
	pol := rm.Policy{ID: rm.NewPolicyID()}
	live := []rm.Attempt{{ID: rm.NewAttemptID(), Policy: pol.ID, Slot: "octo/app#1"}}
	journal := func() ([]rm.Attempt, []rm.Policy, error) { return live, []rm.Policy{pol}, nil }

	q, release, err := warm.Exclusive(d, journal)
	require.NoError(t, err)
	removed, held, err := q.Remove("")
	require.NoError(t, err)
	assert.Equal(t, 1, held)
	require.Len(t, removed, 1)
	assert.Equal(t, "octo/web#1", removed[0].Name())

	_, err = d.Lock()
	var locked *datadir.LockedError
	assert.ErrorAs(t, err, &locked, "the command holds the lock while it evicts")
	release()

	lock, err := d.Lock()
	require.NoError(t, err, "released")
	_, _, err = warm.Exclusive(d, journal)
	assert.ErrorIs(t, err, datadir.ErrLocked, "a daemon holds it")
	require.NoError(t, lock.Close())

	_, _, err = warm.Exclusive(d, func() ([]rm.Attempt, []rm.Policy, error) { return nil, nil, errors.New("journal broken") })
	assert.ErrorContains(t, err, "journal broken", "with the journal unread, nothing is evicted")
	_, err = d.Lock()
	require.NoError(t, err, "and the lock is given back")
}
