package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// liveCondition selects attempts that have not ended. It must match the
// WHERE clause of the partial index attempts_live word for word, or SQLite
// cannot use the index.
const liveCondition = `state NOT IN ('finished', 'failed')`

const attemptColumns = `id, policy_id, state, runner_name, github_runner_id, pid, process_start,
	job_id, job_run_id, job_workflow, job_name, exit_code,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples,
	outcome_kind, outcome_reason, outcome_detail,
	created_at, register_at, started_at, idle_at, busy_at, ended_at, updated_at, last_message, usage_source, job_key`

// activeAttemptsQuery reads a policy's live attempts from the partial index
// only; INDEXED BY makes SQLite fail rather than fall back to a scan.
const activeAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts INDEXED BY attempts_live
	WHERE policy_id = ? AND ` + liveCondition + `
	ORDER BY created_at, rowid`

// liveAttemptsQuery reads a host's live attempts: its policies from their
// host index, then each one's live attempts from the partial index. Only
// the few live rows are sorted.
const liveAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts INDEXED BY attempts_live
	WHERE policy_id IN (SELECT id FROM policies INDEXED BY policies_host WHERE host_id = ?) AND ` + liveCondition + `
	ORDER BY created_at, rowid`

func scanAttempt(sc interface{ Scan(...any) error }) (rm.Attempt, error) {
	var (
		a                                                 rm.Attempt
		pstart, rss                                       int64
		exit                                              sql.NullInt64
		created, reg, started, idle, busy, ended, updated sql.NullInt64
		state, outcomeKind, outcomeReason                 string
		cpuAvg, cpuPeak, samples                          int64
	)
	err := sc.Scan(&a.ID, &a.Policy, &state, &a.RunnerName, &a.GitHubRunnerID, &a.PID, &pstart,
		&a.Job.Number, &a.Job.RunID, &a.Job.Workflow, &a.Job.Name, &exit,
		&rss, &cpuAvg, &cpuPeak, &samples,
		&outcomeKind, &outcomeReason, &a.Outcome.Detail,
		&created, &reg, &started, &idle, &busy, &ended, &updated, &a.LastMessage, &a.Usage.Source, &a.Job.ID)
	if err != nil {
		return rm.Attempt{}, err
	}
	a.State = rm.AttemptState(state)
	a.ProcessStart = uint64(pstart)
	if exit.Valid {
		c := int(exit.Int64)
		a.ExitCode = &c
	}
	a.Usage = rm.AttemptUsage{
		PeakRSSBytes:      uint64(rss),
		CPUAvgMillicores:  uint32(cpuAvg),
		CPUPeakMillicores: uint32(cpuPeak),
		Samples:           uint32(samples),
		Source:            a.Usage.Source,
	}
	a.Outcome.Kind = rm.OutcomeKind(outcomeKind)
	a.Outcome.Reason = rm.FailureReason(outcomeReason)
	a.CreatedAt = fromNanos(created)
	a.RegisterAt = fromNanos(reg)
	a.StartedAt = fromNanos(started)
	a.IdleAt = fromNanos(idle)
	a.BusyAt = fromNanos(busy)
	a.EndedAt = fromNanos(ended)
	a.UpdatedAt = fromNanos(updated)
	return a, nil
}

// attemptArgs are the values of every attempt column but id and created_at,
// in the order of updateAttempt.
func attemptArgs(a rm.Attempt) []any {
	var exit any
	if a.ExitCode != nil {
		exit = int64(*a.ExitCode)
	}
	return []any{a.Policy, string(a.State), a.RunnerName, a.GitHubRunnerID, a.PID, int64(a.ProcessStart),
		a.Job.Number, a.Job.RunID, a.Job.Workflow, a.Job.Name, exit,
		int64(a.Usage.PeakRSSBytes), int64(a.Usage.CPUAvgMillicores), int64(a.Usage.CPUPeakMillicores), int64(a.Usage.Samples),
		string(a.Outcome.Kind), string(a.Outcome.Reason), a.Outcome.Detail,
		nanos(a.RegisterAt), nanos(a.StartedAt), nanos(a.IdleAt), nanos(a.BusyAt), nanos(a.EndedAt),
		nanos(a.UpdatedAt), a.LastMessage, a.Usage.Source, a.Job.ID}
}

const insertAttempt = `INSERT INTO attempts (policy_id, state, runner_name, github_runner_id, pid, process_start,
	job_id, job_run_id, job_workflow, job_name, exit_code,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples,
	outcome_kind, outcome_reason, outcome_detail,
	register_at, started_at, idle_at, busy_at, ended_at, updated_at, last_message, usage_source, job_key, id, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// updateAttempt never changes created_at: an attempt keeps its place in
// time, and in the indexes.
const updateAttempt = `UPDATE attempts SET policy_id = ?, state = ?, runner_name = ?, github_runner_id = ?,
	pid = ?, process_start = ?, job_id = ?, job_run_id = ?, job_workflow = ?, job_name = ?, exit_code = ?,
	peak_rss_bytes = ?, cpu_avg_millicores = ?, cpu_peak_millicores = ?, samples = ?,
	outcome_kind = ?, outcome_reason = ?, outcome_detail = ?,
	register_at = ?, started_at = ?, idle_at = ?, busy_at = ?, ended_at = ?, updated_at = ?, last_message = ?,
	usage_source = ?, job_key = ?
	WHERE id = ?`

// RecordAttempt inserts a new attempt or updates an existing one, reading
// its current state and writing in one immediate transaction.
func (s *Store) RecordAttempt(ctx context.Context, a rm.Attempt) error {
	return s.writeAttempt(ctx, a, false)
}

// ForceAttempt writes a whatever its current state, for recovery.
func (s *Store) ForceAttempt(ctx context.Context, a rm.Attempt) error {
	return s.writeAttempt(ctx, a, true)
}

func (s *Store) writeAttempt(ctx context.Context, a rm.Attempt, force bool) error {
	if err := a.Validate(); err != nil {
		return err
	}
	now := s.now()
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = now
	}
	verb := "record"
	if force {
		verb = "force"
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var (
			cur    string
			policy rm.PolicyID
		)
		err := tx.QueryRowContext(ctx, `SELECT state, policy_id FROM attempts WHERE id = ?`, a.ID).Scan(&cur, &policy)
		found := err == nil
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if force {
				return fmt.Errorf("attempt %s: %w", a.ID, store.ErrNotFound)
			}
		case err != nil:
			return err
		case !force && !rm.AttemptState(cur).CanMoveTo(a.State):
			return fmt.Errorf("attempt %s cannot move from %s to %s: %w", a.ID, cur, a.State, store.ErrIllegalTransition)
		}
		if !found || policy != a.Policy {
			switch ok, err := policyExists(ctx, tx, a.Policy); {
			case err != nil:
				return err
			case !ok:
				return fmt.Errorf("attempt %s names policy %s, which does not exist or was removed: %w", a.ID, a.Policy, store.ErrConflict)
			}
		}
		if found {
			_, err = tx.ExecContext(ctx, updateAttempt, append(attemptArgs(a), a.ID)...)
			return err
		}
		created := a.CreatedAt
		if created.IsZero() {
			created = now
		}
		_, err = tx.ExecContext(ctx, insertAttempt, append(attemptArgs(a), a.ID, nanos(created))...)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s attempt %s: %w", verb, a.ID, err)
	}
	return nil
}

// Attempt returns ErrNotFound if no attempt has that id.
func (s *Store) Attempt(ctx context.Context, id rm.AttemptID) (rm.Attempt, error) {
	a, err := scanAttempt(s.r.QueryRowContext(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return rm.Attempt{}, fmt.Errorf("attempt %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Attempt{}, fmt.Errorf("read attempt %s: %w", id, err)
	}
	return a, nil
}

// ActiveAttempts returns the live attempts of a policy, oldest first, from
// the partial index of live attempts: its cost does not grow with history.
func (s *Store) ActiveAttempts(ctx context.Context, policy rm.PolicyID) ([]rm.Attempt, error) {
	as, err := s.queryAttempts(ctx, activeAttemptsQuery, policy)
	if err != nil {
		return nil, fmt.Errorf("active attempts of policy %s: %w", policy, err)
	}
	return as, nil
}

// LiveAttempts returns the live attempts of the policies host owns, oldest
// first, from the index of the host's policies and the partial index of
// live attempts: its cost does not grow with history.
func (s *Store) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	as, err := s.queryAttempts(ctx, liveAttemptsQuery, host)
	if err != nil {
		return nil, fmt.Errorf("live attempts of host %s: %w", host, err)
	}
	return as, nil
}

// Attempts lists attempts matching f, newest first.
func (s *Store) Attempts(ctx context.Context, f store.AttemptFilter) ([]rm.Attempt, error) {
	q, args := attemptsQuery(f)
	as, err := s.queryAttempts(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return as, nil
}

// attemptsQuery builds the query for f.
func attemptsQuery(f store.AttemptFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if !f.Policy.IsZero() {
		where = append(where, "policy_id = ?")
		args = append(args, f.Policy)
	}
	if len(f.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(", ?", len(f.States)-1)+")")
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, f.Until.UnixNano())
	}
	q := `SELECT ` + attemptColumns + ` FROM attempts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, rowid DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return q, args
}

func (s *Store) queryAttempts(ctx context.Context, q string, args ...any) ([]rm.Attempt, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var as []rm.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	return as, rows.Err()
}
