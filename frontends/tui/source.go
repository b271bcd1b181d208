package tui

import (
	"context"
	"errors"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// Source is everything the TUI reads and changes. The CLI implements it over
// the daemon's API and the journal (StoreSource); the demo over its
// in-process supervisor. Calls come from goroutines other than the UI's, one
// at a time per kind, so an implementation need not be fast, only safe for
// concurrent use.
type Source interface {
	// Status returns the live figures. When only part of them is known (the
	// daemon is not running, so only the journal's view is available), it
	// returns that part with an error wrapping ErrPartial: the TUI shows
	// both.
	Status(ctx context.Context) (status.Status, error)
	// Attempts returns the journal's attempts matching f, newest first.
	Attempts(ctx context.Context, f store.AttemptFilter) ([]rm.Attempt, error)
	// SetPaused pauses or resumes a policy.
	SetPaused(ctx context.Context, policy rm.PolicyID, paused bool) error
	// SetMax changes a policy's maximum of concurrent runners.
	SetMax(ctx context.Context, policy rm.PolicyID, max int) error
	// StopAttempt stops a live attempt's runner.
	StopAttempt(ctx context.Context, id rm.AttemptID) error
	// LogTail returns up to the last lines of the attempt's runner log,
	// oldest first; none (and no error) if it has no log yet.
	LogTail(ctx context.Context, id rm.AttemptID, lines int) ([]string, error)
}

// PolicyHistory is a Source that also knows the journal's policies, the
// removed ones (RemovedAt set) included: the attempts pane names a removed
// policy's attempts "home (removed)" with it, as `runner-manager attempts`
// does, where otherwise it has only an id.
type PolicyHistory interface {
	// Policies maps the ids of the journal's policies, in force and
	// removed, to them (attempts.Policies).
	Policies(ctx context.Context) (map[rm.PolicyID]rm.Policy, error)
}

// ErrPartial marks a Status that holds only what the journal knows, without
// the daemon's live figures (memory, usage, demand, GitHub budget).
var ErrPartial = errors.New("live figures unavailable")
