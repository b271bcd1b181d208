package reconcile

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// rootSweepMinAge is how long ago an attempt must have ended before a
// periodic sweep cleans its root: a pass that concluded it cleans it
// itself once its launches are done, and the two must not race.
const rootSweepMinAge = time.Minute

// rootSweepEvery is how often the supervisor sweeps attempt roots while it
// runs: one ReadDir, and one journal read per root of an attempt this
// process does not know.
const rootSweepEvery = 30 * time.Second

// sweepRoots cleans the attempt roots no live attempt owns, of every
// launcher that lists its roots (rm.RootLister: the native runners' roots,
// the VMs' directories): those of attempts the journal does not know, and
// those of attempts that ended (at least minAge ago) with their Cleanup
// never done. A failed attempt's root is kept as its launcher keeps failed
// roots. It returns how many it cleaned.
func (s *Supervisor) sweepRoots(ctx context.Context, minAge time.Duration) int {
	n := 0
	for _, l := range s.rootListers() {
		n += s.sweepRootsOf(ctx, l, minAge)
	}
	return n
}

// rootListers are the launchers that list their roots (rm.RootLister):
// the default launcher first, then the other backends' in their order.
func (s *Supervisor) rootListers() []rm.Launcher {
	ls := []rm.Launcher{s.cfg.Launcher}
	for _, b := range slices.Sorted(maps.Keys(s.cfg.Launchers)) {
		ls = append(ls, s.cfg.Launchers[b])
	}
	return slices.DeleteFunc(ls, func(l rm.Launcher) bool {
		_, ok := l.(rm.RootLister)
		return !ok
	})
}

// sweepRootsOf sweeps the roots of l, a RootLister, which cleans them.
func (s *Supervisor) sweepRootsOf(ctx context.Context, l rm.Launcher, minAge time.Duration) int {
	ids, err := l.(rm.RootLister).Roots()
	if err != nil {
		s.log.Warn("cannot list attempt directories to sweep", "err", err)
		return 0
	}
	now := s.cfg.Now()
	n := 0
	for _, id := range ids {
		if _, known := s.tab.get(id); known {
			continue // live in this process: its pass cleans it
		}
		a, err := s.cfg.Store.Attempt(ctx, id)
		known, failed := err == nil, false
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			s.log.Warn("cannot read the attempt of a directory to sweep", "attempt", id.String(), "err", err)
			continue
		case a.Live():
			continue
		case minAge > 0 && now.Sub(a.EndedAt) < minAge:
			continue
		default:
			failed = a.Outcome.Kind == rm.Failed
		}
		if err := l.Cleanup(id, failed); err != nil {
			s.log.Warn("could not clean a left-over attempt directory", "attempt", id.String(), "err", err)
			continue
		}
		s.log.Info("cleaned a left-over attempt directory", "attempt", id.String(), "known_to_journal", known, "failed", failed)
		n++
	}
	return n
}
