package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/runner-manager/runner-manager/store"
)

// RecordSession inserts or replaces the session of s.ScaleSetID.
func (s *Store) RecordSession(ctx context.Context, se store.ScaleSetSession) error {
	if err := se.Validate(); err != nil {
		return err
	}
	if se.CreatedAt.IsZero() {
		se.CreatedAt = s.now()
	}
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO scale_set_sessions (scale_set_id, session_id, owner, host_id, scope, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (scale_set_id) DO UPDATE SET
			session_id = excluded.session_id, owner = excluded.owner, host_id = excluded.host_id,
			scope = excluded.scope, created_at = excluded.created_at`,
		se.ScaleSetID, se.SessionID, se.Owner, se.HostID, se.Scope, se.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("record the session of scale set %d: %w", se.ScaleSetID, err)
	}
	return nil
}

const sessionColumns = `scale_set_id, session_id, owner, host_id, scope, created_at`

func scanSession(sc interface{ Scan(...any) error }) (store.ScaleSetSession, error) {
	var (
		se      store.ScaleSetSession
		created sql.NullInt64
	)
	if err := sc.Scan(&se.ScaleSetID, &se.SessionID, &se.Owner, &se.HostID, &se.Scope, &created); err != nil {
		return store.ScaleSetSession{}, err
	}
	se.CreatedAt = fromNanos(created)
	return se, nil
}

// SessionOf returns the recorded session of a scale set; found is false
// when there is none.
func (s *Store) SessionOf(ctx context.Context, scaleSetID int) (store.ScaleSetSession, bool, error) {
	se, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM scale_set_sessions WHERE scale_set_id = ?`, scaleSetID))
	if errors.Is(err, sql.ErrNoRows) {
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
	if _, err := s.w.ExecContext(ctx, `DELETE FROM scale_set_sessions WHERE scale_set_id = ? AND session_id = ?`, scaleSetID, sessionID); err != nil {
		return fmt.Errorf("forget session %s of scale set %d: %w", sessionID, scaleSetID, err)
	}
	return nil
}

// Sessions lists every recorded session, by scale set id.
func (s *Store) Sessions(ctx context.Context) ([]store.ScaleSetSession, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionColumns+` FROM scale_set_sessions ORDER BY scale_set_id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.ScaleSetSession
	for rows.Next() {
		se, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, se)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}
