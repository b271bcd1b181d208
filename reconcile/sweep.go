package reconcile

import (
	"context"
	"errors"
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

// sweepRoots cleans the attempt roots no live attempt owns: those of
// attempts the journal does not know, and those of attempts that ended
// (at least minAge ago) with their Cleanup never done. A failed attempt's
// root is kept as the launcher keeps failed roots. It returns how many it
// cleaned.
func (s *Supervisor) sweepRoots(ctx context.Context, minAge time.Duration) int {
	rl, ok := s.cfg.Launcher.(rm.RootLister)
	if !ok {
		return 0
	}
	ids, err := rl.Roots()
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
		if err := s.cfg.Launcher.Cleanup(id, failed); err != nil {
			s.log.Warn("could not clean a left-over attempt directory", "attempt", id.String(), "err", err)
			continue
		}
		s.log.Info("cleaned a left-over attempt directory", "attempt", id.String(), "known_to_journal", known, "failed", failed)
		n++
	}
	return n
}
