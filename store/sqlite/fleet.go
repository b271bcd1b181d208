package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

var _ store.Fleet = (*Store)(nil)

// RegisterHost implements Fleet.
func (s *Store) RegisterHost(ctx context.Context, h store.FleetHost) error {
	if h.ID.IsZero() {
		return fmt.Errorf("%w: host %q has no id", rm.ErrInvalid, h.Name)
	}
	if h.SeenAt.IsZero() {
		h.SeenAt = s.now()
	}
	reg := h.RegisteredAt
	if reg.IsZero() {
		reg = h.SeenAt
	}
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at, version, registered_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, memory_bytes = excluded.memory_bytes,
			cpus = excluded.cpus, os = excluded.os, arch = excluded.arch,
			seen_at = excluded.seen_at, version = excluded.version,
			registered_at = coalesce(hosts.registered_at, excluded.registered_at)`,
		h.ID, h.Name, int64(h.MemoryBytes), h.CPUs, h.OS, h.Arch, nanos(h.SeenAt), h.Version, nanos(reg))
	if err != nil {
		return fmt.Errorf("register host %s: %w", h.ID, err)
	}
	return nil
}

// Heartbeat implements Fleet.
func (s *Store) Heartbeat(ctx context.Context, host rm.HostID, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE hosts SET seen_at = max(coalesce(seen_at, 0), ?) WHERE id = ?`, at.UnixNano(), host)
	if err != nil {
		return fmt.Errorf("heartbeat of host %s: %w", host, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("heartbeat of host %s: register it first: %w", host, store.ErrNotFound)
	}
	return nil
}

// FleetHosts implements Fleet.
func (s *Store) FleetHosts(ctx context.Context) ([]store.FleetHost, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+hostColumns+`, version, registered_at FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list the fleet's hosts: %w", err)
	}
	defer rows.Close()
	var out []store.FleetHost
	for rows.Next() {
		var (
			h    store.FleetHost
			mem  int64
			seen sql.NullInt64
			reg  sql.NullInt64
		)
		if err := rows.Scan(&h.ID, &h.Name, &mem, &h.CPUs, &h.OS, &h.Arch, &seen, &h.Version, &reg); err != nil {
			return nil, fmt.Errorf("list the fleet's hosts: %w", err)
		}
		h.MemoryBytes, h.SeenAt, h.RegisteredAt = uint64(mem), fromNanos(seen), fromNanos(reg)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the fleet's hosts: %w", err)
	}
	return out, nil
}

// RecordJobWeight implements Fleet.
func (s *Store) RecordJobWeight(ctx context.Context, w store.JobWeight) error {
	if err := w.Validate(); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO job_weights (`+weightColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (attempt_id) DO UPDATE SET
			policy_id = excluded.policy_id, host_id = excluded.host_id, repository = excluded.repository,
			workflow = excluded.workflow, job_name = excluded.job_name, peak_rss_bytes = excluded.peak_rss_bytes,
			cpu_avg_millicores = excluded.cpu_avg_millicores, cpu_peak_millicores = excluded.cpu_peak_millicores,
			samples = excluded.samples, duration_ns = excluded.duration_ns, ended_at = excluded.ended_at`,
		weightArgs(w)...)
	if err != nil {
		return fmt.Errorf("record the weight of attempt %s: %w", w.Attempt, err)
	}
	return nil
}

const weightColumns = `attempt_id, policy_id, host_id, repository, workflow, job_name,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples, duration_ns, ended_at`

func weightArgs(w store.JobWeight) []any {
	return []any{w.Attempt.String(), w.Policy.String(), w.Host.String(), w.Job.Repository, w.Job.Workflow, w.Job.Name,
		int64(w.Usage.PeakRSSBytes), int64(w.Usage.CPUAvgMillicores), int64(w.Usage.CPUPeakMillicores),
		int64(w.Usage.Samples), int64(w.Duration), w.EndedAt.UnixNano()}
}

// weightWhere is the WHERE clause of f (with the leading WHERE, or "");
// arg turns an argument into its placeholder.
func weightWhere(f store.WeightFilter, arg func(any) string) string {
	var where []string
	if !f.Policy.IsZero() {
		where = append(where, "policy_id = "+arg(f.Policy.String()))
	}
	for _, c := range [...]struct{ col, v string }{{"repository", f.Job.Repository}, {"workflow", f.Job.Workflow}, {"job_name", f.Job.Name}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	if !f.Since.IsZero() {
		where = append(where, "ended_at >= "+arg(f.Since.UnixNano()))
	}
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

// weightsIn reads the weights matching f, ordered by job then newest
// first, keeping f.Newest per job (or overall, if !perJob).
func (s *Store) weightsIn(ctx context.Context, f store.WeightFilter, perJob bool) ([][]store.JobWeight, error) {
	var args []any
	where := weightWhere(f, func(v any) string { args = append(args, v); return "?" })
	order := "ended_at DESC, attempt_id"
	if perJob {
		order = "repository, workflow, job_name, " + order
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+weightColumns+` FROM job_weights`+where+` ORDER BY `+order, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var groups [][]store.JobWeight
	for rows.Next() {
		var (
			w                           store.JobWeight
			rss, avg, peak, smp, d, end int64
		)
		if err := rows.Scan(&w.Attempt, &w.Policy, &w.Host, &w.Job.Repository, &w.Job.Workflow, &w.Job.Name,
			&rss, &avg, &peak, &smp, &d, &end); err != nil {
			return nil, err
		}
		w.Usage = rm.AttemptUsage{PeakRSSBytes: uint64(rss), CPUAvgMillicores: uint32(avg), CPUPeakMillicores: uint32(peak), Samples: uint32(smp)}
		w.Duration, w.EndedAt = time.Duration(d), time.Unix(0, end).UTC()
		last := len(groups) - 1
		if last < 0 || (perJob && groups[last][0].Job != w.Job) {
			groups = append(groups, nil)
			last++
		}
		if f.Newest <= 0 || len(groups[last]) < f.Newest {
			groups[last] = append(groups[last], w)
		}
	}
	return groups, rows.Err()
}

// Weights implements Fleet.
func (s *Store) Weights(ctx context.Context, f store.WeightFilter) (store.Weights, error) {
	groups, err := s.weightsIn(ctx, f, false)
	if err != nil {
		return store.Weights{}, fmt.Errorf("read job weights: %w", err)
	}
	if len(groups) == 0 {
		return store.Weights{}, nil
	}
	return store.SumWeights(groups[0]), nil
}

// HeaviestJobs implements Fleet.
func (s *Store) HeaviestJobs(ctx context.Context, f store.WeightFilter) ([]store.JobWeights, error) {
	groups, err := s.weightsIn(ctx, f, true)
	if err != nil {
		return nil, fmt.Errorf("read job weights: %w", err)
	}
	var out []store.JobWeights
	for _, g := range groups {
		out = append(out, store.JobWeights{Job: g[0].Job, Weights: store.SumWeights(g)})
	}
	store.SortHeaviest(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
