package sqlstore

import (
	"context"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
)

// RecordSession inserts or replaces the session of se.ScaleSetID.
func (j *Journal) RecordSession(ctx context.Context, se rm.SessionRecord) error {
	if err := se.Validate(); err != nil {
		return err
	}
	if se.CreatedAt.IsZero() {
		se.CreatedAt = j.c.Now()
	}
	_, err := j.c.Write.Exec(ctx, `
		INSERT INTO scale_set_sessions (scale_set_id, session_id, owner, host_id, scope, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
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

func scanSession(sc Row) (rm.SessionRecord, error) {
	var (
		se rm.SessionRecord
		id int64
	)
	if err := sc.Scan(&id, &se.SessionID, &se.Owner, &se.HostID, &se.Scope, at(&se.CreatedAt)); err != nil {
		return rm.SessionRecord{}, err
	}
	se.ScaleSetID = int(id)
	return se, nil
}

// SessionOf returns the recorded session of a scale set; found is false
// when there is none.
func (j *Journal) SessionOf(ctx context.Context, scaleSetID int) (rm.SessionRecord, bool, error) {
	se, err := scanSession(j.c.Read.QueryRow(ctx, `SELECT `+sessionColumns+` FROM scale_set_sessions WHERE scale_set_id = ?`, int64(scaleSetID)))
	if noRows(err) {
		return rm.SessionRecord{}, false, nil
	}
	if err != nil {
		return rm.SessionRecord{}, false, fmt.Errorf("read the session of scale set %d: %w", scaleSetID, err)
	}
	return se, true, nil
}

// ForgetSession removes the record of a scale set's session if it still
// names sessionID (a newer session recorded since stays).
func (j *Journal) ForgetSession(ctx context.Context, scaleSetID int, sessionID string) error {
	if _, err := j.c.Write.Exec(ctx, `DELETE FROM scale_set_sessions WHERE scale_set_id = ? AND session_id = ?`, int64(scaleSetID), sessionID); err != nil {
		return fmt.Errorf("forget session %s of scale set %d: %w", sessionID, scaleSetID, err)
	}
	return nil
}

// Sessions lists every recorded session, by scale set id.
func (j *Journal) Sessions(ctx context.Context) ([]rm.SessionRecord, error) {
	out, err := QueryAll(ctx, j.c.Read, scanSession, `SELECT `+sessionColumns+` FROM scale_set_sessions ORDER BY scale_set_id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// RecordScaleSet records a scale set a manager created, replacing the
// records of the same scope and name (one deleted at GitHub and created
// again has a new id), in one transaction.
func (j *Journal) RecordScaleSet(ctx context.Context, s rm.ScaleSetRecord) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = j.c.Now()
	}
	err := j.c.Tx(ctx, func(tx DB) error {
		if _, err := tx.Exec(ctx, `DELETE FROM created_scale_sets WHERE scope = ? AND name = ?`, s.Scope, s.Name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO created_scale_sets (scale_set_id, name, scope, host_id, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (scale_set_id) DO UPDATE SET
				name = excluded.name, scope = excluded.scope, host_id = excluded.host_id, created_at = excluded.created_at`,
			int64(s.ScaleSetID), s.Name, s.Scope, s.HostID, s.CreatedAt.UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("record the creation of scale set %q (%d) in %s: %w", s.Name, s.ScaleSetID, s.Scope, err)
	}
	return nil
}

func scanScaleSet(sc Row) (rm.ScaleSetRecord, error) {
	var (
		s  rm.ScaleSetRecord
		id int64
	)
	if err := sc.Scan(&id, &s.Name, &s.Scope, &s.HostID, at(&s.CreatedAt)); err != nil {
		return rm.ScaleSetRecord{}, err
	}
	s.ScaleSetID = int(id)
	return s, nil
}

// ScaleSets lists the recorded scale sets, by id.
func (j *Journal) ScaleSets(ctx context.Context) ([]rm.ScaleSetRecord, error) {
	out, err := QueryAll(ctx, j.c.Read, scanScaleSet, `SELECT scale_set_id, name, scope, host_id, created_at FROM created_scale_sets ORDER BY scale_set_id`)
	if err != nil {
		return nil, fmt.Errorf("list the scale sets created: %w", err)
	}
	return out, nil
}

// ForgetScaleSet removes a scale set's record.
func (j *Journal) ForgetScaleSet(ctx context.Context, scaleSetID int) error {
	if _, err := j.c.Write.Exec(ctx, `DELETE FROM created_scale_sets WHERE scale_set_id = ?`, int64(scaleSetID)); err != nil {
		return fmt.Errorf("forget scale set %d: %w", scaleSetID, err)
	}
	return nil
}
