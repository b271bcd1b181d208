package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

var _ store.Fleet = (*Store)(nil)

// RegisterHost implements store.Fleet.
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
	_, err := s.pool.Exec(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at, version, registered_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, memory_bytes = excluded.memory_bytes,
			cpus = excluded.cpus, os = excluded.os, arch = excluded.arch,
			seen_at = excluded.seen_at, version = excluded.version,
			registered_at = coalesce(hosts.registered_at, excluded.registered_at)`,
		h.ID.String(), h.Name, int64(h.MemoryBytes), h.CPUs, h.OS, h.Arch, nanos(h.SeenAt), h.Version, nanos(reg))
	if err != nil {
		return fmt.Errorf("register host %s: %w", h.ID, err)
	}
	return nil
}

// Heartbeat implements store.Fleet.
func (s *Store) Heartbeat(ctx context.Context, host rm.HostID, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE hosts SET seen_at = GREATEST(seen_at, $1) WHERE id = $2`, at.UnixNano(), host.String())
	if err != nil {
		return fmt.Errorf("heartbeat of host %s: %w", host, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("heartbeat of host %s: register it first: %w", host, store.ErrNotFound)
	}
	return nil
}

// FleetHosts implements store.Fleet.
func (s *Store) FleetHosts(ctx context.Context) ([]store.FleetHost, error) {
	hs, err := queryAll(ctx, s.pool, func(sc row) (store.FleetHost, error) {
		var (
			h         store.FleetHost
			mem       int64
			seen, reg *int64
		)
		if err := sc.Scan(&h.ID, &h.Name, &mem, &h.CPUs, &h.OS, &h.Arch, &seen, &h.Version, &reg); err != nil {
			return store.FleetHost{}, err
		}
		h.MemoryBytes, h.SeenAt, h.RegisteredAt = uint64(mem), fromNanos(seen), fromNanos(reg)
		return h, nil
	}, `SELECT `+hostColumns+`, version, registered_at FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list the fleet's hosts: %w", err)
	}
	return hs, nil
}

// RecordJobWeight implements store.Fleet.
func (s *Store) RecordJobWeight(ctx context.Context, w store.JobWeight) error {
	if err := w.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO job_weights (attempt_id, policy_id, host_id, repository, workflow, job_name,
			peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples, duration_ns, ended_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (attempt_id) DO UPDATE SET
			policy_id = excluded.policy_id, host_id = excluded.host_id, repository = excluded.repository,
			workflow = excluded.workflow, job_name = excluded.job_name, peak_rss_bytes = excluded.peak_rss_bytes,
			cpu_avg_millicores = excluded.cpu_avg_millicores, cpu_peak_millicores = excluded.cpu_peak_millicores,
			samples = excluded.samples, duration_ns = excluded.duration_ns, ended_at = excluded.ended_at`,
		w.Attempt.String(), w.Policy.String(), w.Host.String(), w.Job.Repository, w.Job.Workflow, w.Job.Name,
		int64(w.Usage.PeakRSSBytes), int64(w.Usage.CPUAvgMillicores), int64(w.Usage.CPUPeakMillicores),
		int64(w.Usage.Samples), int64(w.Duration), w.EndedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("record the weight of attempt %s: %w", w.Attempt, err)
	}
	return nil
}

// percentiles are the aggregates of Weights, in its order, over a set of
// rows: nearest rank, as store.Percentile.
const percentiles = `count(*),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY peak_rss_bytes), percentile_disc(0.9) WITHIN GROUP (ORDER BY peak_rss_bytes),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY cpu_avg_millicores), percentile_disc(0.9) WITHIN GROUP (ORDER BY cpu_avg_millicores),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY cpu_peak_millicores), percentile_disc(0.9) WITHIN GROUP (ORDER BY cpu_peak_millicores),
	percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ns), percentile_disc(0.9) WITHIN GROUP (ORDER BY duration_ns)`

// weightRows is the FROM source of the weights matching f: the table, or
// for f.Newest only the newest N rows of each group (partition).
func weightRows(f store.WeightFilter, partition string) (string, []any) {
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
	for _, c := range [...]struct{ col, v string }{{"repository", f.Job.Repository}, {"workflow", f.Job.Workflow}, {"job_name", f.Job.Name}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	if !f.Since.IsZero() {
		where = append(where, "ended_at >= "+arg(f.Since.UnixNano()))
	}
	src := "SELECT * FROM job_weights"
	if len(where) > 0 {
		src += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Newest > 0 {
		over := "ORDER BY ended_at DESC, attempt_id"
		if partition != "" {
			over = "PARTITION BY " + partition + " " + over
		}
		src = "SELECT * FROM (SELECT *, row_number() OVER (" + over + ") AS newness FROM (" + src + ") m) n WHERE newness <= " + arg(f.Newest)
	}
	return "(" + src + ") w", args
}

func scanWeights(sc row, w *store.Weights, extra ...any) error {
	var rss50, rss90, avg50, avg90, pk50, pk90, d50, d90 *int64
	dest := append(extra, &w.Count, &rss50, &rss90, &avg50, &avg90, &pk50, &pk90, &d50, &d90)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	w.PeakRSSP50, w.PeakRSSP90 = uint64(v(rss50)), uint64(v(rss90))
	w.CPUAvgP50, w.CPUAvgP90 = uint32(v(avg50)), uint32(v(avg90))
	w.CPUPeakP50, w.CPUPeakP90 = uint32(v(pk50)), uint32(v(pk90))
	w.DurationP50, w.DurationP90 = time.Duration(v(d50)), time.Duration(v(d90))
	return nil
}

// Weights implements store.Fleet, computing the percentiles in the server.
func (s *Store) Weights(ctx context.Context, f store.WeightFilter) (store.Weights, error) {
	from, args := weightRows(f, "")
	var w store.Weights
	if err := scanWeights(s.pool.QueryRow(ctx, `SELECT `+percentiles+` FROM `+from, args...), &w); err != nil {
		return store.Weights{}, fmt.Errorf("read job weights: %w", err)
	}
	return w, nil
}

// HeaviestJobs implements store.Fleet.
func (s *Store) HeaviestJobs(ctx context.Context, f store.WeightFilter) ([]store.JobWeights, error) {
	const key = "repository, workflow, job_name"
	from, args := weightRows(f, key)
	q := `SELECT ` + key + `, ` + percentiles + ` FROM ` + from + ` GROUP BY ` + key +
		` ORDER BY 6 DESC, 4 DESC, ` + key // p90 peak RSS, count
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	js, err := queryAll(ctx, s.pool, func(sc row) (store.JobWeights, error) {
		var j store.JobWeights
		err := scanWeights(sc, &j.Weights, &j.Job.Repository, &j.Job.Workflow, &j.Job.Name)
		return j, err
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read job weights: %w", err)
	}
	return js, nil
}
