package sqlstore

import (
	"context"
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// liveCondition selects attempts that have not ended. It is the predicate
// of the partial index attempts_live, word for word: a query must state it
// for the planner to read the index.
const liveCondition = `state NOT IN ('finished', 'failed')`

const attemptColumns = `id, policy_id, state, runner_name, github_runner_id, pid, process_start,
	job_id, job_run_id, job_workflow, job_name, exit_code,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples,
	outcome_kind, outcome_reason, outcome_detail,
	created_at, register_at, started_at, idle_at, busy_at, ended_at, updated_at, last_message, usage_source, job_key,
	job_queued_at, job_assigned_at, slot`

// ActiveAttemptsQuery reads a policy's live attempts from the partial
// index only.
func ActiveAttemptsQuery(d Dialect) string {
	return `SELECT ` + attemptColumns + ` FROM attempts` + d.Hint("attempts_live") + `
	WHERE policy_id = ? AND ` + liveCondition + `
	ORDER BY created_at, ` + d.Seq
}

// LiveAttemptsQuery reads a host's live attempts: its policies from their
// host index, then each one's live attempts from the partial index. Only
// the few live rows are sorted.
//
// In a journal that keeps fleet policies, whose attempts run on every
// host, a fleet policy's attempt is the host's whose runner name it bears
// (rm.RunnerName, written with the row): the second argument is that
// prefix as a LIKE pattern.
func LiveAttemptsQuery(d Dialect) string {
	if d.NoFleet != "" {
		return `SELECT ` + attemptColumns + ` FROM attempts` + d.Hint("attempts_live") + `
	WHERE policy_id IN (SELECT id FROM policies` + d.Hint("policies_host") + ` WHERE host_id = ?) AND ` + liveCondition + `
	ORDER BY created_at, ` + d.Seq
	}
	// Two reads of the partial index, not one OR that would scan history.
	return `SELECT ` + attemptColumns + ` FROM attempts WHERE id IN (
		SELECT id FROM attempts WHERE policy_id IN (SELECT id FROM policies WHERE host_id = ? AND NOT fleet) AND ` + liveCondition + `
		UNION ALL
		SELECT id FROM attempts WHERE policy_id IN (SELECT id FROM policies WHERE fleet) AND runner_name LIKE ? AND ` + liveCondition + `)
	ORDER BY created_at, ` + d.Seq
}

// liveArgs are LiveAttemptsQuery's arguments for host.
func (j *Journal) liveArgs(host rm.HostID) []any {
	if j.c.NoFleet != "" {
		return []any{host.String()}
	}
	return []any{host.String(), rm.RunnerNamePrefix(host) + "%"}
}

// AttemptsQuery is the query of the attempts f selects, newest first.
func AttemptsQuery(d Dialect, f store.AttemptFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if !f.Policy.IsZero() {
		where = append(where, "policy_id = ?")
		args = append(args, f.Policy.String())
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
	q += ` ORDER BY created_at DESC, ` + d.Seq + ` DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return q, args
}

func scanAttempt(sc Row) (rm.Attempt, error) {
	var (
		a                                          rm.Attempt
		pid, pstart, rss, cpuAvg, cpuPeak, samples int64
		exit                                       *int64
		state, outcomeKind, outcomeReason          string
	)
	err := sc.Scan(&a.ID, &a.Policy, &state, &a.RunnerName, &a.GitHubRunnerID, &pid, &pstart,
		&a.Job.Number, &a.Job.RunID, &a.Job.Workflow, &a.Job.Name, &exit,
		&rss, &cpuAvg, &cpuPeak, &samples,
		&outcomeKind, &outcomeReason, &a.Outcome.Detail,
		at(&a.CreatedAt), at(&a.RegisterAt), at(&a.StartedAt), at(&a.IdleAt), at(&a.BusyAt), at(&a.EndedAt), at(&a.UpdatedAt),
		&a.LastMessage, &a.Usage.Source, &a.Job.ID, at(&a.Job.QueuedAt), at(&a.Job.AssignedAt), &a.Slot)
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
	a.Usage.PeakRSSBytes = uint64(rss)
	a.Usage.CPUAvgMillicores = uint32(cpuAvg)
	a.Usage.CPUPeakMillicores = uint32(cpuPeak)
	a.Usage.Samples = uint32(samples)
	a.Outcome.Kind = rm.OutcomeKind(outcomeKind)
	a.Outcome.Reason = rm.FailureReason(outcomeReason)
	return a, nil
}

// attemptArgs are the values of every attempt column but id and created_at,
// in the order of updateAttempt.
func attemptArgs(a rm.Attempt) []any {
	var exit any
	if a.ExitCode != nil {
		exit = int64(*a.ExitCode)
	}
	return []any{a.Policy.String(), string(a.State), a.RunnerName, a.GitHubRunnerID, int64(a.PID), int64(a.ProcessStart),
		a.Job.Number, a.Job.RunID, a.Job.Workflow, a.Job.Name, exit,
		int64(a.Usage.PeakRSSBytes), int64(a.Usage.CPUAvgMillicores), int64(a.Usage.CPUPeakMillicores), int64(a.Usage.Samples),
		string(a.Outcome.Kind), string(a.Outcome.Reason), a.Outcome.Detail,
		nanos(a.RegisterAt), nanos(a.StartedAt), nanos(a.IdleAt), nanos(a.BusyAt), nanos(a.EndedAt),
		nanos(a.UpdatedAt), a.LastMessage, a.Usage.Source, a.Job.ID, nanos(a.Job.QueuedAt), nanos(a.Job.AssignedAt), a.Slot}
}

const insertAttempt = `INSERT INTO attempts (policy_id, state, runner_name, github_runner_id, pid, process_start,
	job_id, job_run_id, job_workflow, job_name, exit_code,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples,
	outcome_kind, outcome_reason, outcome_detail,
	register_at, started_at, idle_at, busy_at, ended_at, updated_at, last_message, usage_source, job_key,
	job_queued_at, job_assigned_at, slot, id, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// updateAttempt never changes created_at: an attempt keeps its place in
// time, and in the indexes.
const updateAttempt = `UPDATE attempts SET policy_id = ?, state = ?, runner_name = ?, github_runner_id = ?,
	pid = ?, process_start = ?, job_id = ?, job_run_id = ?, job_workflow = ?, job_name = ?, exit_code = ?,
	peak_rss_bytes = ?, cpu_avg_millicores = ?, cpu_peak_millicores = ?, samples = ?,
	outcome_kind = ?, outcome_reason = ?, outcome_detail = ?,
	register_at = ?, started_at = ?, idle_at = ?, busy_at = ?, ended_at = ?, updated_at = ?, last_message = ?,
	usage_source = ?, job_key = ?, job_queued_at = ?, job_assigned_at = ?, slot = ?
	WHERE id = ?`

// RecordAttempt inserts a new attempt or updates an existing one, reading
// its current state and writing in one transaction.
func (j *Journal) RecordAttempt(ctx context.Context, a rm.Attempt) error {
	return j.writeAttempt(ctx, a, false)
}

// ForceAttempt writes a whatever its current state, for recovery.
func (j *Journal) ForceAttempt(ctx context.Context, a rm.Attempt) error {
	return j.writeAttempt(ctx, a, true)
}

func (j *Journal) writeAttempt(ctx context.Context, a rm.Attempt, force bool) error {
	if err := a.Validate(); err != nil {
		return err
	}
	now := j.c.Now()
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = now
	}
	verb := "record"
	if force {
		verb = "force"
	}
	gone := func() error {
		return fmt.Errorf("attempt %s names policy %s, which does not exist or was removed: %w", a.ID, a.Policy, store.ErrConflict)
	}
	err := j.c.Tx(ctx, func(tx DB) error {
		var (
			cur    string
			policy rm.PolicyID
		)
		err := tx.QueryRow(ctx, `SELECT state, policy_id FROM attempts WHERE id = ?`, a.ID.String()).Scan(&cur, &policy)
		found := err == nil
		switch {
		case noRows(err):
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
				return gone()
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
	if err != nil && j.c.ForeignKeyViolation != nil && j.c.ForeignKeyViolation(err) {
		err = gone() // the policy went meanwhile
	}
	if err != nil {
		return fmt.Errorf("%s attempt %s: %w", verb, a.ID, err)
	}
	return nil
}

// Attempt returns store.ErrNotFound if no attempt has that id.
func (j *Journal) Attempt(ctx context.Context, id rm.AttemptID) (rm.Attempt, error) {
	a, err := scanAttempt(j.c.Read.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE id = ?`, id.String()))
	if noRows(err) {
		return rm.Attempt{}, fmt.Errorf("attempt %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Attempt{}, fmt.Errorf("read attempt %s: %w", id, err)
	}
	return a, nil
}

// ActiveAttempts returns the live attempts of a policy, oldest first, from
// the partial index of live attempts: its cost does not grow with history.
func (j *Journal) ActiveAttempts(ctx context.Context, policy rm.PolicyID) ([]rm.Attempt, error) {
	as, err := QueryAll(ctx, j.c.Read, scanAttempt, j.activeQuery, policy.String())
	if err != nil {
		return nil, fmt.Errorf("active attempts of policy %s: %w", policy, err)
	}
	return as, nil
}

// LiveAttempts returns the live attempts of the policies host owns, oldest
// first, from the index of the host's policies and the partial index of
// live attempts: its cost does not grow with history.
func (j *Journal) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	if host.IsZero() {
		return nil, nil
	}
	as, err := QueryAll(ctx, j.c.Read, scanAttempt, j.liveQuery, j.liveArgs(host)...)
	if err != nil {
		return nil, fmt.Errorf("live attempts of host %s: %w", host, err)
	}
	return as, nil
}

// Attempts lists attempts matching f, newest first.
func (j *Journal) Attempts(ctx context.Context, f store.AttemptFilter) ([]rm.Attempt, error) {
	q, args := AttemptsQuery(j.c.Dialect, f)
	as, err := QueryAll(ctx, j.c.Read, scanAttempt, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return as, nil
}
