package runnermanager

import (
	"context"
	"fmt"
	"time"
)

// SessionRecord is a scale set's message session as the manager that
// opened it recorded it. GitHub keeps a session whose owner died and
// refuses a new one while it exists (409); the record lets the manager's
// next start (or doctor) delete its own stale session by id, and only its
// own.
type SessionRecord struct {
	ScaleSetID int
	SessionID  string
	// Owner is the owner name the session was opened with.
	Owner string
	// HostID names the host whose manager opened it.
	HostID string
	// Scope is the scale set's scope (Scope.String()).
	Scope     string
	CreatedAt time.Time
}

// Validate checks a session record before it is written.
func (s SessionRecord) Validate() error {
	if s.ScaleSetID <= 0 || s.SessionID == "" || s.Owner == "" {
		return fmt.Errorf("%w: a session record needs a scale set id, a session id and an owner (got %d, %q, %q)", ErrInvalid, s.ScaleSetID, s.SessionID, s.Owner)
	}
	return nil
}

// SessionJournal keeps the message sessions a demand source opens. GitHub
// only deletes a session given its id, which only its creator saw: the
// journal is where the next start finds it.
type SessionJournal interface {
	// SessionOf returns the session recorded for a scale set; found is
	// false, with a nil error, when there is none.
	SessionOf(ctx context.Context, scaleSetID int) (s SessionRecord, found bool, err error)
	// RecordSession records a new session, replacing the scale set's
	// previous record.
	RecordSession(ctx context.Context, s SessionRecord) error
	// ForgetSession removes a scale set's record if it still names
	// sessionID.
	ForgetSession(ctx context.Context, scaleSetID int, sessionID string) error
}
