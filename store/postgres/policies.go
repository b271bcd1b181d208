package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// row is what a query's row or rows scan from.
type row interface{ Scan(...any) error }

// PutHost inserts or replaces a host.
func (s *Store) PutHost(ctx context.Context, h rm.Host) error {
	if h.ID.IsZero() {
		return fmt.Errorf("%w: host %q has no id", rm.ErrInvalid, h.Name)
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO hosts (id, name, memory_bytes, cpus, os, arch, seen_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
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

func scanHost(sc row) (rm.Host, error) {
	var (
		h    rm.Host
		mem  int64
		seen *int64
	)
	if err := sc.Scan(&h.ID, &h.Name, &mem, &h.CPUs, &h.OS, &h.Arch, &seen); err != nil {
		return rm.Host{}, err
	}
	h.MemoryBytes = uint64(mem)
	h.SeenAt = fromNanos(seen)
	return h, nil
}

// Host returns store.ErrNotFound if no host has that id.
func (s *Store) Host(ctx context.Context, id rm.HostID) (rm.Host, error) {
	h, err := scanHost(s.pool.QueryRow(ctx, `SELECT `+hostColumns+` FROM hosts WHERE id = $1`, id.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return rm.Host{}, fmt.Errorf("host %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Host{}, fmt.Errorf("read host %s: %w", id, err)
	}
	return h, nil
}

// Hosts lists every host, by name.
func (s *Store) Hosts(ctx context.Context) ([]rm.Host, error) {
	hs, err := queryAll(ctx, s.pool, scanHost, `SELECT `+hostColumns+` FROM hosts ORDER BY name, id`)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	return hs, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const policyColumns = `id, name, host_id, scope_kind, scope_name, runner_group, scale_set, labels,
	backend, runner_dir, min_idle, max_runners, memory_estimate, paused, created_at, updated_at, memory_limit,
	spare, container_image, container_cpus, container_network, container_env, container_volumes, removed_at`

func scanPolicy(sc row) (rm.Policy, error) {
	var (
		p                rm.Policy
		kind             string
		labels           []string
		mem, limit       int64
		created, updated *int64
		removed          *int64
	)
	err := sc.Scan(&p.ID, &p.Name, &p.Host, &kind, &p.Target.Scope.Name, &p.Target.RunnerGroup,
		&p.Target.ScaleSet, &labels, &p.Backend, &p.RunnerDir, &p.MinIdle, &p.Max, &mem, &p.Paused,
		&created, &updated, &limit, &p.Spare, &p.Container.Image, &p.Container.CPUs, &p.Container.Network,
		&p.Container.Env, &p.Container.Volumes, &removed)
	if err != nil {
		return rm.Policy{}, err
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
	if len(labels) > 0 {
		p.Target.Labels = labels
	}
	if len(p.Container.Env) == 0 {
		p.Container.Env = nil
	}
	if len(p.Container.Volumes) == 0 {
		p.Container.Volumes = nil
	}
	p.MemoryEstimate = uint64(mem)
	p.MemoryLimit = uint64(limit) // -1 is rm.MemoryLimitFromPeaks
	p.CreatedAt = fromNanos(created)
	p.UpdatedAt = fromNanos(updated)
	p.RemovedAt = fromNanos(removed)
	return p, nil
}

// policyArgs are the values of every policy column but id and created_at,
// in the order of the UPDATE below ($1..$21).
func policyArgs(p rm.Policy) []any {
	labels := p.Target.Labels
	if labels == nil {
		labels = []string{}
	}
	return []any{p.Name, p.Host.String(), p.Target.Scope.Kind.String(), p.Target.Scope.Name,
		p.Target.RunnerGroup, p.Target.ScaleSet, labels,
		string(p.Backend), p.RunnerDir, p.MinIdle, p.Max, int64(p.MemoryEstimate), p.Paused,
		nanos(p.UpdatedAt), int64(p.MemoryLimit), p.Spare, p.Container.Image, p.Container.CPUs,
		p.Container.Network, nonNil(p.Container.Env), nonNil(p.Container.Volumes)}
}

// nonNil is list, or an empty list for nil (the columns are NOT NULL).
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// checkNameFree returns store.ErrConflict if another policy in force than
// id has name.
func checkNameFree(ctx context.Context, tx pgx.Tx, name string, id rm.PolicyID) error {
	var other rm.PolicyID
	err := tx.QueryRow(ctx, `SELECT id FROM policies WHERE name = $1 AND id != $2 AND removed_at IS NULL`, name, id.String()).Scan(&other)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("policy name %q is taken by policy %s: choose another name: %w", name, other, store.ErrConflict)
}

// checkTargetFree returns a *store.TargetTakenError if another policy in
// force than p serves p's scale set: its runners and p's would mix. The
// transaction is serializable, so two writers cannot both pass it.
func checkTargetFree(ctx context.Context, tx pgx.Tx, p rm.Policy) error {
	if p.Target.ScaleSet == "" {
		return nil
	}
	others, err := queryAll(ctx, tx, scanPolicy, `SELECT `+policyColumns+` FROM policies
		WHERE removed_at IS NULL AND id != $1 AND lower(scale_set) = lower($2)`, p.ID.String(), p.Target.ScaleSet)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.Target.Key() == p.Target.Key() {
			return &store.TargetTakenError{Policy: p.Name, Other: o.Name, OtherID: o.ID, Target: p.Target}
		}
	}
	return nil
}

// policyExists reports whether a policy in force has id.
func policyExists(ctx context.Context, tx pgx.Tx, id rm.PolicyID) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM policies WHERE id = $1 AND removed_at IS NULL)`, id.String()).Scan(&ok)
	return ok, err
}

// policyKept reports whether a policy has id, in force or removed.
func policyKept(ctx context.Context, tx pgx.Tx, id rm.PolicyID) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM policies WHERE id = $1)`, id.String()).Scan(&ok)
	return ok, err
}

// InsertPolicy returns store.ErrConflict if the id or the name exists, and
// the policy's Validate error if it is invalid. A zero CreatedAt is
// stamped with the store's clock, a zero UpdatedAt with CreatedAt.
func (s *Store) InsertPolicy(ctx context.Context, p rm.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error { return s.insertPolicy(ctx, tx, p) })
}

// insertPolicy checks, stamps and inserts p in tx (p is valid).
func (s *Store) insertPolicy(ctx context.Context, tx pgx.Tx, p rm.Policy) error {
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
		_, err := tx.Exec(ctx, `
			INSERT INTO policies (name, host_id, scope_kind, scope_name, runner_group, scale_set,
				labels, backend, runner_dir, min_idle, max_runners, memory_estimate, paused,
				updated_at, memory_limit, spare, container_image, container_cpus, container_network,
				container_env, container_volumes, id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
				$21, $22, $23)`,
			append(policyArgs(p), p.ID.String(), nanos(p.CreatedAt))...)
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
	return s.write(ctx, func(tx pgx.Tx) error { return s.updatePolicy(ctx, tx, p) })
}

// updatePolicy checks, stamps and replaces p in tx (p is valid).
func (s *Store) updatePolicy(ctx context.Context, tx pgx.Tx, p rm.Policy) error {
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
		_, err := tx.Exec(ctx, `
			UPDATE policies SET name = $1, host_id = $2, scope_kind = $3, scope_name = $4,
				runner_group = $5, scale_set = $6, labels = $7, backend = $8, runner_dir = $9,
				min_idle = $10, max_runners = $11, memory_estimate = $12, paused = $13, updated_at = $14,
				memory_limit = $15, spare = $16, container_image = $17, container_cpus = $18,
				container_network = $19, container_env = $20, container_volumes = $21
			WHERE id = $22 AND removed_at IS NULL`,
			append(policyArgs(p), p.ID.String())...)
		return err
	}()
	if err != nil {
		return fmt.Errorf("update policy %q: %w", p.Name, err)
	}
	return nil
}

// Policy returns store.ErrNotFound if no policy has that id; a removed one
// is returned with its RemovedAt.
func (s *Store) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	p, err := scanPolicy(s.pool.QueryRow(ctx, `SELECT `+policyColumns+` FROM policies WHERE id = $1`, id.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return rm.Policy{}, fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %s: %w", id, err)
	}
	return p, nil
}

// PolicyByName returns store.ErrNotFound if no policy in force has that
// name.
func (s *Store) PolicyByName(ctx context.Context, name string) (rm.Policy, error) {
	p, err := scanPolicy(s.pool.QueryRow(ctx, `SELECT `+policyColumns+` FROM policies WHERE name = $1 AND removed_at IS NULL`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return rm.Policy{}, fmt.Errorf("policy %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %q: %w", name, err)
	}
	return p, nil
}

// Policies lists every policy in force, by name.
func (s *Store) Policies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := queryAll(ctx, s.pool, scanPolicy, `SELECT `+policyColumns+` FROM policies WHERE removed_at IS NULL ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	return ps, nil
}

// RemovedPolicies lists the removed policies kept for their history, by
// name, then by when they were removed.
func (s *Store) RemovedPolicies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := queryAll(ctx, s.pool, scanPolicy, `SELECT `+policyColumns+` FROM policies WHERE removed_at IS NOT NULL
		ORDER BY name, removed_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list removed policies: %w", err)
	}
	return ps, nil
}

// DeletePolicy removes a policy in force, keeping it and its attempts as
// history; store.ErrNotFound if no policy in force has id,
// store.ErrConflict while it has live attempts.
func (s *Store) DeletePolicy(ctx context.Context, id rm.PolicyID) error {
	return s.write(ctx, func(tx pgx.Tx) error { return s.deletePolicy(ctx, tx, id, false) })
}

// PurgePolicy deletes a policy, in force or removed, with its attempts;
// store.ErrNotFound if no policy has id, store.ErrConflict while it has
// live attempts.
func (s *Store) PurgePolicy(ctx context.Context, id rm.PolicyID) error {
	return s.write(ctx, func(tx pgx.Tx) error { return s.deletePolicy(ctx, tx, id, true) })
}

// deletePolicy checks and removes (or, with purge, deletes) the policy id
// in tx.
func (s *Store) deletePolicy(ctx context.Context, tx pgx.Tx, id rm.PolicyID, purge bool) error {
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
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE policy_id = $1 AND `+liveCondition, id.String()).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("policy %s has %d live attempts: pause it and wait for them to end, or stop them first: %w", id, live, store.ErrConflict)
		}
		if purge {
			_, err := tx.Exec(ctx, `DELETE FROM policies WHERE id = $1`, id.String())
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE policies SET removed_at = $1 WHERE id = $2`, s.now().UnixNano(), id.String())
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
// attempts: the count and the change in one serializable transaction, so
// an attempt a host writes meanwhile makes one of them retry.
func (s *Store) MovePolicy(ctx context.Context, id rm.PolicyID, to rm.HostID) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var from string
		err := tx.QueryRow(ctx, `SELECT host_id FROM policies WHERE id = $1`, id.String()).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM hosts WHERE id = $1`, to.String()).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("host %s: %w", to, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if from == to.String() {
			return nil
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE policy_id = $1 AND `+liveCondition, id.String()).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return &store.LiveAttemptsError{Policy: id, Live: live}
		}
		_, err = tx.Exec(ctx, `UPDATE policies SET host_id = $1, updated_at = $2 WHERE id = $3`, to.String(), nanos(s.now()), id.String())
		return err
	})
	if err != nil {
		return fmt.Errorf("move policy %s to host %s: %w", id, to, err)
	}
	return nil
}

// ApplyPolicies makes every change of c in one transaction: deletions,
// then updates, then insertions; every policy is validated before any
// write, and the first refusal rolls all back.
func (s *Store) ApplyPolicies(ctx context.Context, c store.PolicyChanges) error {
	for _, p := range slices.Concat(c.Update, c.Insert) {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	if c.Empty() {
		return nil
	}
	return s.write(ctx, func(tx pgx.Tx) error {
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
