package github

import (
	"context"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// SessionRecord is a scale set's message session as the manager that
// opened it recorded it.
type SessionRecord struct {
	ScaleSetID int
	SessionID  string
	// Owner is the owner name the session was opened with.
	Owner string
	// HostID names the host whose manager opened it.
	HostID string
	// Scope is the scale set's scope (runnermanager.Scope.String()).
	Scope     string
	CreatedAt time.Time
}

// SessionJournal keeps the message sessions a ScaleSetTarget opens. GitHub
// keeps the session of a manager that died (a new one is refused with 409
// while it exists) and only deletes one given its id, which only its
// creator saw: the journal is where the next start finds it.
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

// DeleteSession deletes one message session of a scale set at GitHub, by
// its id, with a fresh Actions service admin token for scope: for a session
// whose manager is gone (doctor --fix). nil when it is already gone.
func (c *Client) DeleteSession(ctx context.Context, scope rm.Scope, scaleSetID int, sessionID string) error {
	return c.deleteSession(ctx, scope, scaleSetID, sessionID)
}
