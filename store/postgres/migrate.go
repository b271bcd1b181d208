package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/runner-manager/runner-manager/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded steps in order (store.ReadMigrations).
func migrations() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFiles, "migrations")
}

// SchemaVersion is the schema version this program writes: the number of
// its newest migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// migrationLock is the key of the advisory lock held while migrating: hosts
// starting at once over one new database apply each step once, one after
// the other. ("runner-m" in ASCII.)
const migrationLock int64 = 0x72756e6e65722d6d

// schemaTable records each step applied, with when; the schema's version is
// its highest.
const schemaTable = `CREATE TABLE IF NOT EXISTS runner_manager_schema (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrate applies the steps the database lacks in one transaction, under
// the advisory lock, reading the version inside it. A schema newer than
// this program's is refused before anything is written.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	newest := ms[len(ms)-1].Version
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		have, exists, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if have > newest {
			return fmt.Errorf("%w: the database has schema version %d, newer than this program's %d: upgrade runner-manager (nothing was written)", ErrSchemaTooNew, have, newest)
		}
		if have == newest {
			return nil
		}
		if !exists {
			if _, err := tx.Exec(ctx, schemaTable); err != nil {
				return fmt.Errorf("create the schema table (may this user create tables in the database?): %w", err)
			}
		}
		for _, m := range ms {
			if m.Version <= have {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO runner_manager_schema (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("stamp migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}

// schemaVersion reads the highest step applied; exists is false in a
// database the store never migrated (version 0).
func schemaVersion(ctx context.Context, tx pgx.Tx) (version int, exists bool, err error) {
	if err := tx.QueryRow(ctx, `SELECT to_regclass('runner_manager_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, false, fmt.Errorf("read the schema version: %w", err)
	}
	if !exists {
		return 0, false, nil
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM runner_manager_schema`).Scan(&version); err != nil {
		return 0, true, fmt.Errorf("read the schema version: %w", err)
	}
	return version, true, nil
}
