package warm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/status"
)

// HoldLive marks held the slots the journal's live attempts of this host
// name (rm.Attempt.Slot), each under its policy's backend (policies, by
// id; an unknown policy's attempt under the default backend): what a
// restarted daemon does before its first lease, and what the commands
// that prune or remove slots without a daemon do first, so that a runner
// a crash left running keeps the work folder it runs in.
func (p *Pool) HoldLive(live []rm.Attempt, policies []rm.Policy) {
	backend := map[rm.PolicyID]rm.Backend{}
	for _, pol := range policies {
		backend[pol.ID] = pol.Backend.OrDefault()
	}
	for _, a := range live {
		if a.Slot == "" {
			continue
		}
		b, ok := backend[a.Policy]
		if !ok {
			b = rm.DefaultBackend
		}
		p.Hold(b, a.ID, a.Slot)
	}
}

// Reclaim evicts free slots, least recently used first, until need bytes
// are freed or no free slot is left, and returns what it freed as the
// slots' records say: admission's hook (reconcile.Admission.Reclaim) when
// the disk is below its floor, so that a job is not refused for space
// that cold caches hold.
func (p *Pool) Reclaim(need uint64) uint64 {
	size, err := p.Size()
	if err != nil || size <= 0 || need == 0 {
		return 0
	}
	target := size - int64(min(need, uint64(size)))
	evicted, err := p.Prune(target)
	if err != nil {
		p.log.Warn("workspace slots not all evicted for disk space", "err", err)
	}
	var freed uint64
	for _, s := range evicted {
		freed += uint64(max(s.Bytes, 0))
	}
	if freed > 0 {
		p.log.Info("evicted workspace slots: the disk was below admission's floor", "slots", len(evicted), "bytes", freed)
	}
	return freed
}

// Status is the slots as the read model shows them (status.Warm): their
// size against the cap, and one line per repository and backend, most
// recently used first.
func (p *Pool) Status() (*status.Warm, error) {
	list, err := p.List()
	if err != nil {
		return nil, err
	}
	return Summary(list, p.cap), nil
}

// Summary sums slots by repository and backend for the read model.
func Summary(list []Info, cap int64) *status.Warm {
	out := &status.Warm{CapBytes: cap, Repos: []status.WarmRepo{}}
	at := map[[2]string]int{}
	for _, s := range list {
		key := [2]string{string(s.Backend.OrDefault()), strings.ToLower(s.Repo)}
		i, ok := at[key]
		if !ok {
			i = len(out.Repos)
			at[key] = i
			out.Repos = append(out.Repos, status.WarmRepo{Repo: s.Repo, Backend: key[0]})
		}
		r := &out.Repos[i]
		r.Slots++
		if !s.HeldBy.IsZero() {
			r.Held++
		}
		r.Bytes += s.Bytes
		r.Uses += s.Uses
		r.Hits += s.Hits
		if s.LastUsed.After(r.LastUsed) {
			r.LastUsed = s.LastUsed
		}
		out.Slots++
		out.Bytes += s.Bytes
	}
	slices.SortStableFunc(out.Repos, func(a, b status.WarmRepo) int { return b.LastUsed.Compare(a.LastUsed) })
	return out
}

// Journal is what the commands that evict slots read of the journal: this
// host's live attempts and the policies (HoldLive). A data directory with
// no journal yet returns none.
type Journal func() (live []rm.Attempt, policies []rm.Policy, err error)

// Exclusive is the slots of data directory d for a command that evicts
// them with no daemon running: it takes the data directory's lock, so no
// daemon starts and leases a slot meanwhile (a running one holds it: the
// error is a *datadir.LockedError, errors.Is datadir.ErrLocked), then
// holds the slots the journal's live attempts name (a runner a crash left
// running keeps its work folder). The daemon keeps which attempt holds a
// slot in its memory, so evicting beside it could empty a slot it is
// leasing: with a daemon running, it prunes to the cap itself after every
// attempt, and these commands wait for it to stop. release gives the lock
// back.
func Exclusive(d datadir.Dir, journal Journal, opts ...Option) (p *Pool, release func(), err error) {
	if _, err := os.Stat(d.Root()); errors.Is(err, fs.ErrNotExist) {
		return NewPool(d, opts...), func() {}, nil // nothing there: no slots, no daemon
	}
	lock, err := d.Lock()
	if err != nil {
		return nil, nil, err
	}
	release = func() { _ = lock.Close() }
	p = NewPool(d, opts...)
	if journal != nil {
		live, policies, err := journal()
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("read the journal's live attempts, whose slots are left alone: %w", err)
		}
		p.HoldLive(live, policies)
	}
	return p, release, nil
}
