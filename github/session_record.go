package github

import (
	"context"
	"time"

	"github.com/actions/scaleset"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
)

// The bounds of recording a new message session in the journal: a failed
// write is tried again after recordRetryBase, doubling up to
// recordRetryCap, for at most recordRetryFor, while the session serves.
const (
	recordRetryBase = time.Second
	recordRetryCap  = 30 * time.Second
	recordRetryFor  = 30 * time.Minute
)

// recordSession records the session s just opened in the journal. A
// failed write does not hold the watch (serving matters more): it is
// tried again in the background, with backoff, until written, the session
// is no longer the target's (replaced or closed: its record would be
// stale), ctx ends, or recordRetryFor passed.
//
// While it is unwritten, a crash leaves a session the next start cannot
// delete: GitHub's DELETE needs the session's id, which only the create
// answer carried; actions/scaleset v0.4.0 has no call that lists or gets
// a scale set's sessions (client.go: MessageSessionClient creates one;
// session_client.go deletes and refreshes by id), and the 409 of the next
// create names only the owner. The next start then waits for the session
// as for another owner's (openSession). The retry keeps that window as
// short as the journal's outage.
func (t *ScaleSetTarget) recordSession(ctx context.Context, s *scaleset.MessageSessionClient, rec rm.SessionRecord) {
	j := t.opts.Journal
	if j == nil {
		return
	}
	err := j.RecordSession(ctx, rec)
	if err == nil {
		return
	}
	t.log.Warn("cannot record the message session in the journal; trying again while serving",
		"session", rec.SessionID, "err", err)
	go func() {
		until := time.Now().Add(recordRetryFor)
		pace := backoff.Policy{Base: recordRetryBase, Cap: recordRetryCap}
		for try := 2; ; try++ {
			// No jitter: one writer waits for its own journal.
			timer := time.NewTimer(pace.Ceiling(try - 2))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			t.mu.Lock()
			current := t.session == s && !t.closed
			t.mu.Unlock()
			if !current {
				return
			}
			err := j.RecordSession(ctx, rec)
			if err == nil {
				t.log.Info("message session recorded in the journal", "session", rec.SessionID, "tries", try)
				return
			}
			if ctx.Err() != nil {
				return
			}
			if time.Now().After(until) {
				t.log.Error("gave up recording the message session in the journal; after a crash the next start waits for it",
					"session", rec.SessionID, "tries", try, "err", err)
				return
			}
		}
	}()
}
