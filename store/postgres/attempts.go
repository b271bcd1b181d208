package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// liveCondition selects attempts that have not ended. It is the predicate
// of the partial index attempts_live: a query must state it for the
// planner to read the index.
const liveCondition = `state NOT IN ('finished', 'failed')`

const attemptColumns = `id, policy_id, state, runner_name, github_runner_id, pid, process_start,
	job_id, job_run_id, job_workflow, job_name, exit_code,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples,
	outcome_kind, outcome_reason, outcome_detail,
	created_at, register_at, started_at, idle_at, busy_at, ended_at, updated_at, last_message, usage_source, job_key`

// activeAttemptsQuery reads a policy's live attempts from the partial index.
const activeAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts
	WHERE policy_id = $1 AND ` + liveCondition + `
	ORDER BY created_at, seq`

func scanAttempt(sc row) (rm.Attempt, error) {
	var (
		a                                                 rm.Attempt
		pid, pstart, rss, cpuAvg, cpuPeak, samples        int64
		exit                                              *int64
		created, reg, started, idle, busy, ended, updated *int64
		state, outcomeKind, outcomeReason, source         string
	)
	err := sc.Scan(&a.ID, &a.Policy, &state, &a.RunnerName, &a.GitHubRunnerID, &pid, &pstart,
		&a.Job.Number, &a.Job.RunID, &a.Job.Workflow, &a.Job.Name, &exit,
		&rss, &cpuAvg, &cpuPeak, &samples,
		&outcomeKind, &outcomeReason, &a.Outcome.Detail,
		&created, &reg, &started, &idle, &busy, &ended, &updated, &a.LastMessage, &source, &a.Job.ID)
	if err != nil {
		return rm.Attempt{}, err
	}
	a.State = rm.AttemptState(state)
	a.PID = int(pid)
	a.ProcessStart = uint64(pstart)
	if exit != nil {
		c := int(*exit)
		a.ExitCode = &c
	}
	a.Usage = rm.AttemptUsage{
		PeakRSSBytes:      uint64(rss),
		CPUAvgMillicores:  uint32(cpuAvg),
		CPUPeakMillicores: uint32(cpuPeak),
		Samples:           uint32(samples),
		Source:            source,
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
// in the order of updateAttempt ($1..$27).
func attemptArgs(a rm.Attempt) []any {
	var exit *int64
	if a.ExitCode != nil {
		c := int64(*a.ExitCode)
		exit = &c
	}
	return []any{a.Policy.String(), string(a.State), a.RunnerName, a.GitHubRunnerID, int64(a.PID), int64(a.ProcessStart),
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
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
		$21, $22, $23, $24, $25, $26, $27, $28, $29)`

// updateAttempt never changes created_at: an attempt keeps its place in
// time, and in the indexes.
const updateAttempt = `UPDATE attempts SET policy_id = $1, state = $2, runner_name = $3, github_runner_id = $4,
	pid = $5, process_start = $6, job_id = $7, job_run_id = $8, job_workflow = $9, job_name = $10, exit_code = $11,
	peak_rss_bytes = $12, cpu_avg_millicores = $13, cpu_peak_millicores = $14, samples = $15,
	outcome_kind = $16, outcome_reason = $17, outcome_detail = $18,
	register_at = $19, started_at = $20, idle_at = $21, busy_at = $22, ended_at = $23, updated_at = $24,
	last_message = $25, usage_source = $26, job_key = $27
	WHERE id = $28`

// RecordAttempt inserts a new attempt or updates an existing one, reading
// its current state and writing in one transaction.
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
	err := s.write(ctx, func(tx pgx.Tx) error {
		var (
			cur    string
			policy rm.PolicyID
		)
		err := tx.QueryRow(ctx, `SELECT state, policy_id FROM attempts WHERE id = $1`, a.ID.String()).Scan(&cur, &policy)
		found := err == nil
		switch {
		case errors.Is(err, pgx.ErrNoRows):
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
			_, err = tx.Exec(ctx, updateAttempt, append(attemptArgs(a), a.ID.String())...)
			return err
		}
		created := a.CreatedAt
		if created.IsZero() {
			created = now
		}
		_, err = tx.Exec(ctx, insertAttempt, append(attemptArgs(a), a.ID.String(), nanos(created))...)
		return err
	})
	if pgCode(err) == "23503" { // foreign_key_violation: the policy went meanwhile
		err = fmt.Errorf("attempt %s names policy %s, which does not exist or was removed: %w", a.ID, a.Policy, store.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("%s attempt %s: %w", verb, a.ID, err)
	}
	return nil
}

// Attempt returns store.ErrNotFound if no attempt has that id.
func (s *Store) Attempt(ctx context.Context, id rm.AttemptID) (rm.Attempt, error) {
	a, err := scanAttempt(s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE id = $1`, id.String()))
	if errors.Is(err, pgx.ErrNoRows) {
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
	as, err := queryAll(ctx, s.pool, scanAttempt, activeAttemptsQuery, policy.String())
	if err != nil {
		return nil, fmt.Errorf("active attempts of policy %s: %w", policy, err)
	}
	return as, nil
}

// Attempts lists attempts matching f, newest first.
func (s *Store) Attempts(ctx context.Context, f store.AttemptFilter) ([]rm.Attempt, error) {
	q, args := attemptsQuery(f)
	as, err := queryAll(ctx, s.pool, scanAttempt, q, args...)
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if !f.Policy.IsZero() {
		where = append(where, "policy_id = "+arg(f.Policy.String()))
	}
	if len(f.States) > 0 {
		states := make([]string, len(f.States))
		for i, st := range f.States {
			states[i] = string(st)
		}
		where = append(where, "state = ANY("+arg(states)+")")
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= "+arg(f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		where = append(where, "created_at < "+arg(f.Until.UnixNano()))
	}
	q := `SELECT ` + attemptColumns + ` FROM attempts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, seq DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + arg(f.Limit)
	}
	return q, args
}

// liveAttemptsQuery reads the live attempts of every policy a host owns,
// from the partial index (one probe per policy).
const liveAttemptsQuery = `SELECT ` + attemptColumns + ` FROM attempts
	WHERE policy_id IN (SELECT id FROM policies WHERE host_id = $1) AND ` + liveCondition + `
	ORDER BY created_at, seq`

// LiveAttempts returns the live attempts of the policies host owns, oldest
// first: what a host may conclude, reap or deregister, and no other's.
func (s *Store) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	as, err := queryAll(ctx, s.pool, scanAttempt, liveAttemptsQuery, host.String())
	if err != nil {
		return nil, fmt.Errorf("live attempts of host %s: %w", host, err)
	}
	return as, nil
}
