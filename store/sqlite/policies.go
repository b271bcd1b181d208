package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// PutHost inserts or replaces a host.
func (s *Store) PutHost(ctx context.Context, h rm.Host) error {
	if h.ID.IsZero() {
		return fmt.Errorf("%w: host %q has no id", rm.ErrInvalid, h.Name)
	}
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, memory_bytes = excluded.memory_bytes,
			cpus = excluded.cpus, os = excluded.os, arch = excluded.arch,
			seen_at = excluded.seen_at`,
		h.ID, h.Name, int64(h.MemoryBytes), h.CPUs, h.OS, h.Arch, nanos(h.SeenAt))
	if err != nil {
		return fmt.Errorf("put host %s: %w", h.ID, err)
	}
	return nil
}

const hostColumns = `id, name, memory_bytes, cpus, os, arch, seen_at`

func scanHost(sc interface{ Scan(...any) error }) (rm.Host, error) {
	var (
		h    rm.Host
		mem  int64
		seen sql.NullInt64
	)
	if err := sc.Scan(&h.ID, &h.Name, &mem, &h.CPUs, &h.OS, &h.Arch, &seen); err != nil {
		return rm.Host{}, err
	}
	h.MemoryBytes = uint64(mem)
	h.SeenAt = fromNanos(seen)
	return h, nil
}

// Host returns ErrNotFound if no host has that id.
func (s *Store) Host(ctx context.Context, id rm.HostID) (rm.Host, error) {
	h, err := scanHost(s.r.QueryRowContext(ctx, `SELECT `+hostColumns+` FROM hosts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return rm.Host{}, fmt.Errorf("host %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Host{}, fmt.Errorf("read host %s: %w", id, err)
	}
	return h, nil
}

// Hosts lists every host, by name.
func (s *Store) Hosts(ctx context.Context) ([]rm.Host, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+hostColumns+` FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	defer rows.Close()
	var hs []rm.Host
	for rows.Next() {
		h, err := scanHost(rows)
		if err != nil {
			return nil, fmt.Errorf("list hosts: %w", err)
		}
		hs = append(hs, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return hs, nil
}

// policyColumns are read back in scanPolicy's order; a removed policy's
// name is in removed_name (migration 0008).
const policyColumns = `id, CASE WHEN removed_at IS NULL THEN name ELSE removed_name END, host_id, scope_kind, scope_name, runner_group, scale_set, labels,
	backend, runner_dir, min_idle, max_runners, memory_estimate, paused, created_at, updated_at, memory_limit,
	container_image, container_cpus, container_network, container_env, container_volumes, spare, removed_at`

func scanPolicy(sc interface{ Scan(...any) error }) (rm.Policy, error) {
	var (
		p                rm.Policy
		kind, labels     string
		mem, limit       int64
		created, updated sql.NullInt64
		removed          sql.NullInt64
		env, volumes     string
	)
	err := sc.Scan(&p.ID, &p.Name, &p.Host, &kind, &p.Target.Scope.Name, &p.Target.RunnerGroup,
		&p.Target.ScaleSet, &labels, &p.Backend, &p.RunnerDir, &p.MinIdle, &p.Max, &mem, &p.Paused,
		&created, &updated, &limit, &p.Container.Image, &p.Container.CPUs, &p.Container.Network, &env, &volumes, &p.Spare, &removed)
	if err != nil {
		return rm.Policy{}, err
	}
	if p.Container.Env, err = fromJSONList(env); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: container environment names: %w", p.ID, err)
	}
	if p.Container.Volumes, err = fromJSONList(volumes); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: container volumes: %w", p.ID, err)
	}
	switch kind {
	case "repo":
		p.Target.Scope.Kind = rm.ScopeRepository
	case "org":
		p.Target.Scope.Kind = rm.ScopeOrganization
	case "enterprise":
		p.Target.Scope.Kind = rm.ScopeEnterprise
	default:
		return rm.Policy{}, fmt.Errorf("policy %s has unknown scope kind %q", p.ID, kind)
	}
	if labels != "" {
		p.Target.Labels = strings.Split(labels, ",")
	}
	p.MemoryEstimate = uint64(mem)
	p.MemoryLimit = uint64(limit)
	p.CreatedAt = fromNanos(created)
	p.UpdatedAt = fromNanos(updated)
	p.RemovedAt = fromNanos(removed)
	return p, nil
}

// policyArgs are the values of every policy column but id and created_at,
// in the order of the UPDATE below.
func policyArgs(p rm.Policy) []any {
	return []any{p.Name, p.Host, p.Target.Scope.Kind.String(), p.Target.Scope.Name,
		p.Target.RunnerGroup, p.Target.ScaleSet, strings.Join(p.Target.Labels, ","),
		string(p.Backend), p.RunnerDir, p.MinIdle, p.Max, int64(p.MemoryEstimate), p.Paused,
		nanos(p.UpdatedAt), int64(p.MemoryLimit), p.Container.Image, p.Container.CPUs,
		p.Container.Network, toJSONList(p.Container.Env), toJSONList(p.Container.Volumes), p.Spare}
}

// toJSONList is list as a JSON array, "" when empty.
func toJSONList(list []string) string {
	if len(list) == 0 {
		return ""
	}
	b, _ := json.Marshal(list) // strings always marshal
	return string(b)
}

// fromJSONList reads what toJSONList wrote.
func fromJSONList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return nil, err
	}
	return list, nil
}

// checkNameFree returns ErrConflict if another policy in force than id has
// name.
func checkNameFree(ctx context.Context, tx *sql.Tx, name string, id rm.PolicyID) error {
	var other rm.PolicyID
	err := tx.QueryRowContext(ctx, `SELECT id FROM policies WHERE name = ? AND id != ? AND removed_at IS NULL`, name, id).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("policy name %q is taken by policy %s: choose another name: %w", name, other, store.ErrConflict)
}

// checkTargetFree returns a *TargetTakenError if another policy in force
// than p serves p's scale set: its runners and p's would mix.
func checkTargetFree(ctx context.Context, tx *sql.Tx, p rm.Policy) error {
	if p.Target.ScaleSet == "" {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+policyColumns+` FROM policies
		WHERE removed_at IS NULL AND id != ? AND lower(scale_set) = lower(?)`, p.ID, p.Target.ScaleSet)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		o, err := scanPolicy(rows)
		if err != nil {
			return err
		}
		if o.Target.Key() == p.Target.Key() {
			return &store.TargetTakenError{Policy: p.Name, Other: o.Name, OtherID: o.ID, Target: p.Target}
		}
	}
	return rows.Err()
}

// policyExists reports whether a policy in force has id.
func policyExists(ctx context.Context, tx *sql.Tx, id rm.PolicyID) (bool, error) {
	return policyRow(ctx, tx, id, `SELECT 1 FROM policies WHERE id = ? AND removed_at IS NULL`)
}

// policyKept reports whether a policy has id, in force or removed.
func policyKept(ctx context.Context, tx *sql.Tx, id rm.PolicyID) (bool, error) {
	return policyRow(ctx, tx, id, `SELECT 1 FROM policies WHERE id = ?`)
}

func policyRow(ctx context.Context, tx *sql.Tx, id rm.PolicyID, query string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, query, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// InsertPolicy returns ErrConflict if the id or the name exists, and the
// policy's Validate error if it is invalid. A zero CreatedAt is stamped
// with the store's clock, a zero UpdatedAt with CreatedAt.
func (s *Store) InsertPolicy(ctx context.Context, p rm.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.insertPolicy(ctx, tx, p) })
}

func (s *Store) insertPolicy(ctx context.Context, tx *sql.Tx, p rm.Policy) error {
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	err := func() error {
		switch ok, err := policyKept(ctx, tx, p.ID); {
		case err != nil:
			return err
		case ok:
			return fmt.Errorf("policy id %s exists: %w", p.ID, store.ErrConflict)
		}
		if err := checkNameFree(ctx, tx, p.Name, p.ID); err != nil {
			return err
		}
		if err := checkTargetFree(ctx, tx, p); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO policies (name, host_id, scope_kind, scope_name, runner_group, scale_set,
				labels, backend, runner_dir, min_idle, max_runners, memory_estimate, paused,
				updated_at, memory_limit, container_image, container_cpus, container_network,
				container_env, container_volumes, spare, id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(policyArgs(p), p.ID, nanos(p.CreatedAt))...)
		return err
	}()
	if err != nil {
		return fmt.Errorf("insert policy %q: %w", p.Name, err)
	}
	return nil
}

// UpdatePolicy replaces a policy but its CreatedAt, and stamps UpdatedAt
// with the store's clock.
func (s *Store) UpdatePolicy(ctx context.Context, p rm.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.updatePolicy(ctx, tx, p) })
}

func (s *Store) updatePolicy(ctx context.Context, tx *sql.Tx, p rm.Policy) error {
	p.UpdatedAt = s.now()
	err := func() error {
		switch ok, err := policyExists(ctx, tx, p.ID); {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("policy %s: %w", p.ID, store.ErrNotFound)
		}
		if err := checkNameFree(ctx, tx, p.Name, p.ID); err != nil {
			return err
		}
		if err := checkTargetFree(ctx, tx, p); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			UPDATE policies SET name = ?, host_id = ?, scope_kind = ?, scope_name = ?,
				runner_group = ?, scale_set = ?, labels = ?, backend = ?, runner_dir = ?,
				min_idle = ?, max_runners = ?, memory_estimate = ?, paused = ?, updated_at = ?,
				memory_limit = ?, container_image = ?, container_cpus = ?, container_network = ?,
				container_env = ?, container_volumes = ?, spare = ?
			WHERE id = ? AND removed_at IS NULL`,
			append(policyArgs(p), p.ID)...)
		return err
	}()
	if err != nil {
		return fmt.Errorf("update policy %q: %w", p.Name, err)
	}
	return nil
}

// Policy returns ErrNotFound if no policy has that id; a removed one is
// returned with its RemovedAt.
func (s *Store) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	p, err := scanPolicy(s.r.QueryRowContext(ctx, `SELECT `+policyColumns+` FROM policies WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return rm.Policy{}, fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %s: %w", id, err)
	}
	return p, nil
}

// PolicyByName returns ErrNotFound if no policy in force has that name.
func (s *Store) PolicyByName(ctx context.Context, name string) (rm.Policy, error) {
	p, err := scanPolicy(s.r.QueryRowContext(ctx, `SELECT `+policyColumns+` FROM policies WHERE name = ? AND removed_at IS NULL`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return rm.Policy{}, fmt.Errorf("policy %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %q: %w", name, err)
	}
	return p, nil
}

// Policies lists every policy in force, by name.
func (s *Store) Policies(ctx context.Context) ([]rm.Policy, error) {
	return s.listPolicies(ctx, `SELECT `+policyColumns+` FROM policies WHERE removed_at IS NULL ORDER BY name`)
}

// RemovedPolicies lists the removed policies kept for their history, by
// name, then by when they were removed.
func (s *Store) RemovedPolicies(ctx context.Context) ([]rm.Policy, error) {
	return s.listPolicies(ctx, `SELECT `+policyColumns+` FROM policies WHERE removed_at IS NOT NULL
		ORDER BY removed_name, removed_at, id`)
}

func (s *Store) listPolicies(ctx context.Context, query string) ([]rm.Policy, error) {
	rows, err := s.r.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	defer rows.Close()
	var ps []rm.Policy
	for rows.Next() {
		p, err := scanPolicy(rows)
		if err != nil {
			return nil, fmt.Errorf("list policies: %w", err)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	return ps, nil
}

// DeletePolicy removes a policy in force, keeping it and its attempts as
// history; ErrNotFound if no policy in force has id, ErrConflict while it
// has live attempts.
func (s *Store) DeletePolicy(ctx context.Context, id rm.PolicyID) error {
	return s.write(ctx, func(tx *sql.Tx) error { return s.deletePolicy(ctx, tx, id, false) })
}

// PurgePolicy deletes a policy, in force or removed, with its attempts;
// ErrNotFound if no policy has id, ErrConflict while it has live attempts.
func (s *Store) PurgePolicy(ctx context.Context, id rm.PolicyID) error {
	return s.write(ctx, func(tx *sql.Tx) error { return s.deletePolicy(ctx, tx, id, true) })
}

func (s *Store) deletePolicy(ctx context.Context, tx *sql.Tx, id rm.PolicyID, purge bool) error {
	exists := policyExists
	if purge {
		exists = policyKept
	}
	err := func() error {
		switch ok, err := exists(ctx, tx, id); {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
		}
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM attempts INDEXED BY attempts_live
			WHERE policy_id = ? AND `+liveCondition, id).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("policy %s has %d live attempts: pause it and wait for them to end, or stop them first: %w", id, live, store.ErrConflict)
		}
		if purge {
			_, err := tx.ExecContext(ctx, `DELETE FROM policies WHERE id = ?`, id)
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE policies SET removed_at = ?, removed_name = name, name = '~' || id
			WHERE id = ?`, s.now().UnixNano(), id)
		return err
	}()
	if err != nil {
		if purge {
			return fmt.Errorf("purge policy: %w", err)
		}
		return fmt.Errorf("remove policy: %w", err)
	}
	return nil
}

// MovePolicy hands policy id to host to, refused while it has live
// attempts: the count and the change in one immediate transaction, so no
// attempt is written between them.
func (s *Store) MovePolicy(ctx context.Context, id rm.PolicyID, to rm.HostID) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var from rm.HostID
		err := tx.QueryRowContext(ctx, `SELECT host_id FROM policies WHERE id = ?`, id).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM hosts WHERE id = ?`, to).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("host %s: %w", to, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if from == to {
			return nil
		}
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM attempts INDEXED BY attempts_live
			WHERE policy_id = ? AND `+liveCondition, id).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return &store.LiveAttemptsError{Policy: id, Live: live}
		}
		_, err = tx.ExecContext(ctx, `UPDATE policies SET host_id = ?, updated_at = ? WHERE id = ?`, to, nanos(s.now()), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("move policy %s to host %s: %w", id, to, err)
	}
	return nil
}

// ApplyPolicies makes every change of c in one transaction: deletions,
// then updates, then insertions; the first refusal rolls all back.
func (s *Store) ApplyPolicies(ctx context.Context, c store.PolicyChanges) error {
	for _, p := range slices.Concat(c.Update, c.Insert) {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	if c.Empty() {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		for _, id := range c.Delete {
			if err := s.deletePolicy(ctx, tx, id, false); err != nil {
				return err
			}
		}
		for _, p := range c.Update {
			if err := s.updatePolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		for _, p := range c.Insert {
			if err := s.insertPolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}
