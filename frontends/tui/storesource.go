package tui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/attempts"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// StoreSource is a Source over the journal plus what the caller wires in:
// the daemon's live figures and its stop. Policy edits are written to the
// journal (the daemon re-reads it), attempts come from the journal, logs
// from the attempts' directories under DataDir.
type StoreSource struct {
	// Store is the journal; it is read, and written only for policy edits.
	Store store.Store
	// DataDir is the data directory holding attempts/<id>/runner.log.
	DataDir string
	// StaleAfter is the age of a heartbeat past which a host of the fleet
	// is shown stale (0: status.DefaultStaleAfter).
	StaleAfter time.Duration
	// Live returns the daemon's live figures. Nil, or an error from it,
	// gives the journal's view only (with an error wrapping ErrPartial).
	Live func(ctx context.Context) (status.Status, error)
	// Stop stops a live attempt's runner; nil when no daemon can.
	Stop func(ctx context.Context, id rm.AttemptID) error
	// Changed, if set, is called after a policy edit was written, to tell
	// the daemon at once (it re-reads the journal every few seconds
	// anyway, so its error is not the user's).
	Changed func(ctx context.Context) error
	// Now stamps a journal-only Status (default time.Now); the journal
	// stamps edits itself.
	Now func() time.Time

	// The fleet's hosts beside the daemon's figures, read at most every
	// fleetEvery.
	fleetMu sync.Mutex
	fleet   *status.Fleet
	fleetAt time.Time
}

// fleetEvery is how often the fleet's hosts are read beside the daemon's
// figures: a heartbeat is tens of seconds apart, a status refresh one.
const fleetEvery = 5 * time.Second

// fleetStatus is the store's fleet, read again when older than
// fleetEvery; a failed read keeps the last one.
func (s *StoreSource) fleetStatus(ctx context.Context) *status.Fleet {
	now := s.now()
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	if s.fleet != nil && now.Sub(s.fleetAt) < fleetEvery && !now.Before(s.fleetAt) {
		return s.fleet
	}
	if f, err := status.FleetOf(ctx, s.Store, now, s.StaleAfter); err == nil {
		s.fleet, s.fleetAt = f, now
	}
	return s.fleet
}

var _ Source = (*StoreSource)(nil)

// Status returns the daemon's live figures with the policies as the journal
// has them (an edit shows before the daemon re-reads it, and a policy the
// daemon runs no loop for still shows), or, without the daemon, what the
// journal alone tells with an error wrapping ErrPartial.
func (s *StoreSource) Status(ctx context.Context) (status.Status, error) {
	liveErr := errors.New("no daemon connected")
	if s.Live != nil {
		st, err := s.Live(ctx)
		if err == nil {
			policies, err := s.Store.Policies(ctx)
			if err != nil {
				return status.Status{}, fmt.Errorf("read the policies from the journal: %w", err)
			}
			st = st.WithPolicies(policies)
			if st.Fleet == nil {
				st.Fleet = s.fleetStatus(ctx)
			}
			// Who holds each fleet policy's session and each host's
			// share; a failed read shows the daemon's figures alone.
			if withSets, err := st.WithFleetSets(ctx, s.Store); err == nil {
				st = withSets
			}
			// Who registered each runner GitHub lists; a failed read
			// leaves them unjudged.
			if withOwners, err := st.WithOwners(ctx, s.Store); err == nil {
				st = withOwners
			}
			return st, nil
		}
		if ctx.Err() != nil {
			return status.Status{}, err
		}
		liveErr = err
	}
	st, err := status.FromJournal(ctx, s.Store, rm.HostID{}, s.now())
	if err != nil {
		return status.Status{}, err
	}
	st.Fleet.Judge(s.now(), s.StaleAfter)
	return st, fmt.Errorf("%w, showing the journal only: %v", ErrPartial, liveErr)
}

// Attempts implements Source.
func (s *StoreSource) Attempts(ctx context.Context, f store.AttemptFilter) ([]rm.Attempt, error) {
	as, err := s.Store.Attempts(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("read the attempts from the journal: %w", err)
	}
	return as, nil
}

// Policies implements PolicyHistory with attempts.Policies.
func (s *StoreSource) Policies(ctx context.Context) (map[rm.PolicyID]rm.Policy, error) {
	ps, err := attempts.Policies(ctx, s.Store)
	if err != nil {
		return nil, fmt.Errorf("read the policies from the journal: %w", err)
	}
	return ps, nil
}

var _ PolicyHistory = (*StoreSource)(nil)

// SetPaused writes the policy paused or active in the journal.
func (s *StoreSource) SetPaused(ctx context.Context, id rm.PolicyID, paused bool) error {
	return s.edit(ctx, id, policyedit.Edit{Paused: &paused})
}

// SetMax writes the policy's max in the journal; a max the policy refuses
// (below 1 or below its min idle) is an error wrapping rm.ErrInvalid.
func (s *StoreSource) SetMax(ctx context.Context, id rm.PolicyID, max int) error {
	return s.edit(ctx, id, policyedit.Edit{Max: &max})
}

func (s *StoreSource) edit(ctx context.Context, id rm.PolicyID, e policyedit.Edit) error {
	p, err := s.Store.Policy(ctx, id)
	if err != nil {
		return fmt.Errorf("read the policy from the journal: %w", err)
	}
	_, changes, err := e.Write(ctx, s.Store, p)
	if err != nil || len(changes) == 0 {
		return err
	}
	if s.Changed != nil {
		_ = s.Changed(ctx) // the daemon re-reads the journal on its own too
	}
	return nil
}

// StopAttempt asks the daemon to stop the attempt.
func (s *StoreSource) StopAttempt(ctx context.Context, id rm.AttemptID) error {
	if s.Stop == nil {
		return errors.New("only the daemon stops runners, and none is connected: start it with `runner-manager run`")
	}
	return s.Stop(ctx, id)
}

// LogTail reads the last lines of the attempt's runner log
// (attempts.TailLog); none if the attempt has no log (yet, or any more).
func (s *StoreSource) LogTail(ctx context.Context, id rm.AttemptID, lines int) ([]string, error) {
	return attempts.TailLog(s.DataDir, id, lines)
}

func (s *StoreSource) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
