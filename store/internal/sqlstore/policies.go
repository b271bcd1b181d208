package sqlstore

import (
	"context"
	"fmt"
	"slices"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// policyColumns are read back in scanPolicy's order.
func policyColumns(d Dialect) string {
	return `id, ` + d.PolicyName + `, host_id, scope_kind, scope_name, runner_group, scale_set, labels,
	backend, runner_dir, min_idle, max_runners, memory_estimate, paused, created_at, updated_at, memory_limit,
	spare, container_image, container_cpus, container_network, container_env, container_volumes, removed_at,
	vm_image, spare_auto, fleet, vm_forward, cold, monitor`
}

func (j *Journal) scanPolicy(sc Row) (rm.Policy, error) {
	var (
		p          rm.Policy
		kind       string
		mem, limit int64
		spareAuto  bool
	)
	labels, readLabels := j.c.Labels.Dest()
	env, readEnv := j.c.Names.Dest()
	volumes, readVolumes := j.c.Names.Dest()
	forward, readForward := j.c.Names.Dest()
	err := sc.Scan(&p.ID, &p.Name, &p.Host, &kind, &p.Target.Scope.Name, &p.Target.RunnerGroup,
		&p.Target.ScaleSet, labels, &p.Backend, &p.RunnerDir, &p.MinIdle, &p.Max, &mem, &p.Paused,
		at(&p.CreatedAt), at(&p.UpdatedAt), &limit, &p.Spare, &p.Container.Image, &p.Container.CPUs, &p.Container.Network,
		env, volumes, at(&p.RemovedAt), &p.VM.Image, &spareAuto, &p.Fleet, forward, &p.Cold, &p.Monitor)
	if err != nil {
		return rm.Policy{}, err
	}
	if p.Target.Labels, err = readLabels(); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: labels: %w", p.ID, err)
	}
	if p.Container.Env, err = readEnv(); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: container environment names: %w", p.ID, err)
	}
	if p.Container.Volumes, err = readVolumes(); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: container volumes: %w", p.ID, err)
	}
	if p.VM.Forward, err = readForward(); err != nil {
		return rm.Policy{}, fmt.Errorf("policy %s: VM forwards: %w", p.ID, err)
	}
	for _, l := range []*[]string{&p.Target.Labels, &p.Container.Env, &p.Container.Volumes, &p.VM.Forward} {
		if len(*l) == 0 {
			*l = nil
		}
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
	p.MemoryEstimate = uint64(mem)
	p.MemoryLimit = uint64(limit) // -1 is rm.MemoryLimitFromPeaks
	if spareAuto {
		p.Spare = rm.SpareAuto
	}
	return p, nil
}

// policyArgs are the values of every policy column but id and created_at,
// in the order of the UPDATE below.
func (j *Journal) policyArgs(p rm.Policy) []any {
	return []any{p.Name, p.Host.String(), p.Target.Scope.Kind.String(), p.Target.Scope.Name,
		p.Target.RunnerGroup, p.Target.ScaleSet, j.c.Labels.Arg(p.Target.Labels),
		string(p.Backend), p.RunnerDir, p.MinIdle, p.Max, int64(p.MemoryEstimate), p.Paused,
		nanos(p.UpdatedAt), int64(p.MemoryLimit), max(p.Spare, 0), p.Container.Image, p.Container.CPUs,
		p.Container.Network, j.c.Names.Arg(p.Container.Env), j.c.Names.Arg(p.Container.Volumes), p.VM.Image,
		p.Spare == rm.SpareAuto, // auto is a column of its own: spare keeps its CHECK (spare >= 0)
		p.Fleet, j.c.Names.Arg(p.VM.Forward), p.Cold, p.Monitor}
}

// validPolicy returns p's Validate error, or an rm.ErrInvalid if p is a
// fleet policy and the journal cannot keep one (Dialect.NoFleet).
func (j *Journal) validPolicy(p rm.Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Fleet && j.c.NoFleet != "" {
		return fmt.Errorf("%w: policy %q: a fleet policy needs a fleet journal (PostgreSQL: [store] url); %s", rm.ErrInvalid, p.Name, j.c.NoFleet)
	}
	return nil
}

// checkNameFree returns store.ErrConflict if another policy in force than
// id has name.
func checkNameFree(ctx context.Context, tx DB, name string, id rm.PolicyID) error {
	var other rm.PolicyID
	err := tx.QueryRow(ctx, `SELECT id FROM policies WHERE name = ? AND id != ? AND removed_at IS NULL`, name, id.String()).Scan(&other)
	if noRows(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("policy name %q is taken by policy %s: choose another name: %w", name, other, store.ErrConflict)
}

// checkTargetFree returns a *store.TargetTakenError if another policy in
// force than p serves p's scale set: its runners and p's would mix. The
// transaction writes alone (SQLite) or is serializable (PostgreSQL), so
// two writers cannot both pass it.
func (j *Journal) checkTargetFree(ctx context.Context, tx DB, p rm.Policy) error {
	if p.Target.ScaleSet == "" {
		return nil
	}
	others, err := QueryAll(ctx, tx, j.scanPolicy, `SELECT `+j.policyFields+` FROM policies
		WHERE removed_at IS NULL AND id != ? AND lower(scale_set) = lower(?)`, p.ID.String(), p.Target.ScaleSet)
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
func policyExists(ctx context.Context, tx DB, id rm.PolicyID) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM policies WHERE id = ? AND removed_at IS NULL)`, id.String()).Scan(&ok)
	return ok, err
}

// policyKept reports whether a policy has id, in force or removed.
func policyKept(ctx context.Context, tx DB, id rm.PolicyID) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM policies WHERE id = ?)`, id.String()).Scan(&ok)
	return ok, err
}

// InsertPolicy returns store.ErrConflict if the id or the name exists, and
// the policy's Validate error if it is invalid (or a fleet policy the
// journal cannot keep). A zero CreatedAt is
// stamped with the store's clock, a zero UpdatedAt with CreatedAt.
func (j *Journal) InsertPolicy(ctx context.Context, p rm.Policy) error {
	if err := j.validPolicy(p); err != nil {
		return err
	}
	return j.c.Tx(ctx, func(tx DB) error { return j.insertPolicy(ctx, tx, p) })
}

// insertPolicy checks, stamps and inserts p in tx (p is valid).
func (j *Journal) insertPolicy(ctx context.Context, tx DB, p rm.Policy) error {
	if p.CreatedAt.IsZero() {
		p.CreatedAt = j.c.Now()
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
		if err := j.checkTargetFree(ctx, tx, p); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO policies (name, host_id, scope_kind, scope_name, runner_group, scale_set,
				labels, backend, runner_dir, min_idle, max_runners, memory_estimate, paused,
				updated_at, memory_limit, spare, container_image, container_cpus, container_network,
				container_env, container_volumes, vm_image, spare_auto, fleet, vm_forward, cold, monitor, id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(j.policyArgs(p), p.ID.String(), nanos(p.CreatedAt))...)
		return err
	}()
	if err != nil {
		return fmt.Errorf("insert policy %q: %w", p.Name, err)
	}
	return nil
}

// UpdatePolicy replaces a policy but its CreatedAt, and stamps UpdatedAt
// with the store's clock.
func (j *Journal) UpdatePolicy(ctx context.Context, p rm.Policy) error {
	if err := j.validPolicy(p); err != nil {
		return err
	}
	return j.c.Tx(ctx, func(tx DB) error { return j.updatePolicy(ctx, tx, p) })
}

// updatePolicy checks, stamps and replaces p in tx (p is valid).
func (j *Journal) updatePolicy(ctx context.Context, tx DB, p rm.Policy) error {
	p.UpdatedAt = j.c.Now()
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
		if err := j.checkTargetFree(ctx, tx, p); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			UPDATE policies SET name = ?, host_id = ?, scope_kind = ?, scope_name = ?,
				runner_group = ?, scale_set = ?, labels = ?, backend = ?, runner_dir = ?,
				min_idle = ?, max_runners = ?, memory_estimate = ?, paused = ?, updated_at = ?,
				memory_limit = ?, spare = ?, container_image = ?, container_cpus = ?,
				container_network = ?, container_env = ?, container_volumes = ?, vm_image = ?, spare_auto = ?,
				fleet = ?, vm_forward = ?, cold = ?, monitor = ?
			WHERE id = ? AND removed_at IS NULL`,
			append(j.policyArgs(p), p.ID.String())...)
		return err
	}()
	if err != nil {
		return fmt.Errorf("update policy %q: %w", p.Name, err)
	}
	return nil
}

// Policy returns store.ErrNotFound if no policy has that id; a removed one
// is returned with its RemovedAt.
func (j *Journal) Policy(ctx context.Context, id rm.PolicyID) (rm.Policy, error) {
	p, err := j.scanPolicy(j.c.Read.QueryRow(ctx, `SELECT `+j.policyFields+` FROM policies WHERE id = ?`, id.String()))
	if noRows(err) {
		return rm.Policy{}, fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %s: %w", id, err)
	}
	return p, nil
}

// PolicyByName returns store.ErrNotFound if no policy in force has that
// name.
func (j *Journal) PolicyByName(ctx context.Context, name string) (rm.Policy, error) {
	p, err := j.scanPolicy(j.c.Read.QueryRow(ctx, `SELECT `+j.policyFields+` FROM policies WHERE name = ? AND removed_at IS NULL`, name))
	if noRows(err) {
		return rm.Policy{}, fmt.Errorf("policy %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return rm.Policy{}, fmt.Errorf("read policy %q: %w", name, err)
	}
	return p, nil
}

// Policies lists every policy in force, by name.
func (j *Journal) Policies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := QueryAll(ctx, j.c.Read, j.scanPolicy, `SELECT `+j.policyFields+` FROM policies WHERE removed_at IS NULL ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	return ps, nil
}

// RemovedPolicies lists the removed policies kept for their history, by
// name, then by when they were removed.
func (j *Journal) RemovedPolicies(ctx context.Context) ([]rm.Policy, error) {
	ps, err := QueryAll(ctx, j.c.Read, j.scanPolicy, `SELECT `+j.policyFields+` FROM policies WHERE removed_at IS NOT NULL
		ORDER BY `+j.c.RemovedName+`, removed_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list removed policies: %w", err)
	}
	return ps, nil
}

// DeletePolicy removes a policy in force, keeping it and its attempts as
// history; store.ErrNotFound if no policy in force has id,
// store.ErrConflict while it has live attempts.
func (j *Journal) DeletePolicy(ctx context.Context, id rm.PolicyID) error {
	return j.c.Tx(ctx, func(tx DB) error { return j.deletePolicy(ctx, tx, id, false) })
}

// PurgePolicy deletes a policy, in force or removed, with its attempts;
// store.ErrNotFound if no policy has id, store.ErrConflict while it has
// live attempts.
func (j *Journal) PurgePolicy(ctx context.Context, id rm.PolicyID) error {
	return j.c.Tx(ctx, func(tx DB) error { return j.deletePolicy(ctx, tx, id, true) })
}

// liveCount counts the live attempts of a policy, from the partial index.
func (j *Journal) liveCount(ctx context.Context, tx DB, id rm.PolicyID) (int, error) {
	var live int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM attempts`+j.c.Hint("attempts_live")+`
		WHERE policy_id = ? AND `+liveCondition, id.String()).Scan(&live)
	return live, err
}

// deletePolicy checks and removes (or, with purge, deletes) the policy id
// in tx.
func (j *Journal) deletePolicy(ctx context.Context, tx DB, id rm.PolicyID, purge bool) error {
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
		live, err := j.liveCount(ctx, tx, id)
		if err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("policy %s has %d live attempts: pause it and wait for them to end, or stop them first: %w", id, live, store.ErrConflict)
		}
		if purge {
			_, err := tx.Exec(ctx, `DELETE FROM policies WHERE id = ?`, id.String())
			return err
		}
		_, err = tx.Exec(ctx, j.c.RemovePolicy, j.c.Now().UnixNano(), id.String())
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
// attempts: the count and the change in one transaction, so no attempt is
// written between them (or, serializable, one of the two is retried).
func (j *Journal) MovePolicy(ctx context.Context, id rm.PolicyID, to rm.HostID) error {
	err := j.c.Tx(ctx, func(tx DB) error {
		var from rm.HostID
		err := tx.QueryRow(ctx, `SELECT host_id FROM policies WHERE id = ?`, id.String()).Scan(&from)
		if noRows(err) {
			return fmt.Errorf("policy %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM hosts WHERE id = ?`, to.String()).Scan(&one)
		if noRows(err) {
			return fmt.Errorf("host %s: %w", to, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if from == to {
			return nil
		}
		live, err := j.liveCount(ctx, tx, id)
		if err != nil {
			return err
		}
		if live > 0 {
			return &store.LiveAttemptsError{Policy: id, Live: live}
		}
		_, err = tx.Exec(ctx, `UPDATE policies SET host_id = ?, updated_at = ? WHERE id = ?`, to.String(), nanos(j.c.Now()), id.String())
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
func (j *Journal) ApplyPolicies(ctx context.Context, c store.PolicyChanges) error {
	for _, p := range slices.Concat(c.Update, c.Insert) {
		if err := j.validPolicy(p); err != nil {
			return err
		}
	}
	if c.Empty() {
		return nil
	}
	return j.c.Tx(ctx, func(tx DB) error {
		for _, id := range c.Delete {
			if err := j.deletePolicy(ctx, tx, id, false); err != nil {
				return err
			}
		}
		for _, p := range c.Update {
			if err := j.updatePolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		for _, p := range c.Insert {
			if err := j.insertPolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}
