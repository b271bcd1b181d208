package reconcile

import (
	"context"

	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/store"
)

// SessionJournal keeps scale-set message sessions in the journal, so a
// manager restarted after a crash deletes the session it left (the scale
// set would answer 409 to a new one for ever). store and github never
// import each other: this adapter is where they meet.
func SessionJournal(st store.Store) github.SessionJournal { return sessionJournal{st} }

type sessionJournal struct{ st store.Store }

func (j sessionJournal) SessionOf(ctx context.Context, scaleSetID int) (github.SessionRecord, bool, error) {
	s, found, err := j.st.SessionOf(ctx, scaleSetID)
	return github.SessionRecord(s), found, err
}

func (j sessionJournal) RecordSession(ctx context.Context, s github.SessionRecord) error {
	return j.st.RecordSession(ctx, store.ScaleSetSession(s))
}

func (j sessionJournal) ForgetSession(ctx context.Context, scaleSetID int, sessionID string) error {
	return j.st.ForgetSession(ctx, scaleSetID, sessionID)
}
