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

// ScaleSetRecord is a scale set a manager created at GitHub. A policy's
// removal deletes the scale set only if it is recorded here (the manager
// made it), never one it found; doctor lists the recorded ones no policy
// uses any more.
type ScaleSetRecord struct {
	ScaleSetID int
	// Name and Scope (Scope.String()) are the scale set's at its creation.
	Name  string
	Scope string
	// HostID names the host whose manager created it.
	HostID    string
	CreatedAt time.Time
}

// Validate checks a scale set record before it is written.
func (s ScaleSetRecord) Validate() error {
	if s.ScaleSetID <= 0 || s.Name == "" || s.Scope == "" {
		return fmt.Errorf("%w: a scale set record needs an id, a name and a scope (got %d, %q, %q)", ErrInvalid, s.ScaleSetID, s.Name, s.Scope)
	}
	return nil
}

// ScaleSetJournal keeps the scale sets a demand source created: a
// capability a SessionJournal may also have (store.Store does), asked for
// with a type assertion.
type ScaleSetJournal interface {
	// RecordScaleSet records a scale set just created, replacing any
	// record of the same scope and name (a scale set deleted at GitHub and
	// created again has a new id).
	RecordScaleSet(ctx context.Context, s ScaleSetRecord) error
	// ScaleSets lists the recorded scale sets, by id.
	ScaleSets(ctx context.Context) ([]ScaleSetRecord, error)
	// ForgetScaleSet removes a scale set's record; forgetting what is not
	// recorded is not an error.
	ForgetScaleSet(ctx context.Context, scaleSetID int) error
}
