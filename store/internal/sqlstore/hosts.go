package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// PutHost inserts or replaces a host.
func (j *Journal) PutHost(ctx context.Context, h rm.Host) error {
	if h.ID.IsZero() {
		return fmt.Errorf("%w: host %q has no id", rm.ErrInvalid, h.Name)
	}
	_, err := j.c.Write.Exec(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, memory_bytes = excluded.memory_bytes,
			cpus = excluded.cpus, os = excluded.os, arch = excluded.arch,
			seen_at = excluded.seen_at`,
		h.ID.String(), h.Name, int64(h.MemoryBytes), h.CPUs, h.OS, h.Arch, nanos(h.SeenAt))
	if err != nil {
		return fmt.Errorf("put host %s: %w", h.ID, err)
	}
	return nil
}

const hostColumns = `id, name, memory_bytes, cpus, os, arch, seen_at`

// scanHost reads hostColumns, then extra.
func scanHost(sc Row, extra ...any) (rm.Host, error) {
	var (
		h   rm.Host
		mem int64
	)
	dest := append([]any{&h.ID, &h.Name, &mem, &h.CPUs, &h.OS, &h.Arch, at(&h.SeenAt)}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return rm.Host{}, err
	}
	h.MemoryBytes = uint64(mem)
	return h, nil
}

func scanHostOnly(sc Row) (rm.Host, error) { return scanHost(sc) }

// Host returns store.ErrNotFound if no host has that id.
func (j *Journal) Host(ctx context.Context, id rm.HostID) (rm.Host, error) {
	h, err := scanHost(j.c.Read.QueryRow(ctx, `SELECT `+hostColumns+` FROM hosts WHERE id = ?`, id.String()))
	if noRows(err) {
		return rm.Host{}, fmt.Errorf("host %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Host{}, fmt.Errorf("read host %s: %w", id, err)
	}
	return h, nil
}

// Hosts lists every host, by name.
func (j *Journal) Hosts(ctx context.Context) ([]rm.Host, error) {
	hs, err := QueryAll(ctx, j.c.Read, scanHostOnly, `SELECT `+hostColumns+` FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return hs, nil
}

// RegisterHost implements store.Fleet.
func (j *Journal) RegisterHost(ctx context.Context, h store.FleetHost) error {
	if h.ID.IsZero() {
		return fmt.Errorf("%w: host %q has no id", rm.ErrInvalid, h.Name)
	}
	if h.SeenAt.IsZero() {
		h.SeenAt = j.c.Now()
	}
	reg := h.RegisteredAt
	if reg.IsZero() {
		reg = h.SeenAt
	}
	_, err := j.c.Write.Exec(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at, version, registered_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
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
func (j *Journal) Heartbeat(ctx context.Context, host rm.HostID, seen time.Time) error {
	n, err := j.c.Write.Exec(ctx, j.c.Heartbeat, seen.UnixNano(), host.String())
	if err != nil {
		return fmt.Errorf("heartbeat of host %s: %w", host, err)
	}
	if n == 0 {
		return fmt.Errorf("heartbeat of host %s: register it first: %w", host, store.ErrNotFound)
	}
	return nil
}

// FleetHosts implements store.Fleet.
func (j *Journal) FleetHosts(ctx context.Context) ([]store.FleetHost, error) {
	hs, err := QueryAll(ctx, j.c.Read, func(sc Row) (store.FleetHost, error) {
		var h store.FleetHost
		var err error
		h.Host, err = scanHost(sc, &h.Version, at(&h.RegisteredAt))
		return h, err
	}, `SELECT `+hostColumns+`, version, registered_at FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list the fleet's hosts: %w", err)
	}
	return hs, nil
}

// WeightColumns are the columns of job_weights, in the order of
// RecordJobWeight's arguments.
const WeightColumns = `attempt_id, policy_id, host_id, repository, workflow, job_name,
	peak_rss_bytes, cpu_avg_millicores, cpu_peak_millicores, samples, duration_ns, ended_at`

// RecordJobWeight implements store.Fleet.
func (j *Journal) RecordJobWeight(ctx context.Context, w store.JobWeight) error {
	if err := w.Validate(); err != nil {
		return err
	}
	_, err := j.c.Write.Exec(ctx, `
		INSERT INTO job_weights (`+WeightColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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

// WeightWhere is the WHERE clause of f (with the leading WHERE, or ""),
// and its arguments.
func WeightWhere(f store.WeightFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if !f.Policy.IsZero() {
		where = append(where, "policy_id = ?")
		args = append(args, f.Policy.String())
	}
	for _, c := range [...]struct{ col, v string }{{"repository", f.Job.Repository}, {"workflow", f.Job.Workflow}, {"job_name", f.Job.Name}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if !f.Since.IsZero() {
		where = append(where, "ended_at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}
