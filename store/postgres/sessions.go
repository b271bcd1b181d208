package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// RecordSession inserts or replaces the session of se.ScaleSetID.
func (s *Store) RecordSession(ctx context.Context, se store.ScaleSetSession) error {
	if se.ScaleSetID <= 0 || se.SessionID == "" || se.Owner == "" {
		return fmt.Errorf("%w: a session record needs a scale set id, a session id and an owner (got %d, %q, %q)", rm.ErrInvalid, se.ScaleSetID, se.SessionID, se.Owner)
	}
	if se.CreatedAt.IsZero() {
		se.CreatedAt = s.now()
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO scale_set_sessions (scale_set_id, session_id, owner, host_id, scope, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (scale_set_id) DO UPDATE SET
			session_id = excluded.session_id, owner = excluded.owner, host_id = excluded.host_id,
			scope = excluded.scope, created_at = excluded.created_at`,
		int64(se.ScaleSetID), se.SessionID, se.Owner, se.HostID, se.Scope, se.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("record the session of scale set %d: %w", se.ScaleSetID, err)
	}
	return nil
}

const sessionColumns = `scale_set_id, session_id, owner, host_id, scope, created_at`

func scanSession(sc row) (store.ScaleSetSession, error) {
	var (
		se      store.ScaleSetSession
		id      int64
		created *int64
	)
	if err := sc.Scan(&id, &se.SessionID, &se.Owner, &se.HostID, &se.Scope, &created); err != nil {
		return store.ScaleSetSession{}, err
	}
	se.ScaleSetID = int(id)
	se.CreatedAt = fromNanos(created)
	return se, nil
}

// SessionOf returns the recorded session of a scale set; found is false
// when there is none.
func (s *Store) SessionOf(ctx context.Context, scaleSetID int) (store.ScaleSetSession, bool, error) {
	se, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM scale_set_sessions WHERE scale_set_id = $1`, int64(scaleSetID)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ScaleSetSession{}, false, nil
	}
	if err != nil {
		return store.ScaleSetSession{}, false, fmt.Errorf("read the session of scale set %d: %w", scaleSetID, err)
	}
	return se, true, nil
}

// ForgetSession removes the record of a scale set's session if it still
// names sessionID (a newer session recorded since stays).
func (s *Store) ForgetSession(ctx context.Context, scaleSetID int, sessionID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM scale_set_sessions WHERE scale_set_id = $1 AND session_id = $2`, int64(scaleSetID), sessionID); err != nil {
		return fmt.Errorf("forget session %s of scale set %d: %w", sessionID, scaleSetID, err)
	}
	return nil
}

// Sessions lists every recorded session, by scale set id.
func (s *Store) Sessions(ctx context.Context) ([]store.ScaleSetSession, error) {
	out, err := queryAll(ctx, s.pool, scanSession, `SELECT `+sessionColumns+` FROM scale_set_sessions ORDER BY scale_set_id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}
