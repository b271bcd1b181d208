package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

// journalTables are the tables the schema's steps create; a journal that
// lacks one was damaged by hand.
var journalTables = []string{"hosts", "policies", "attempts", "scale_set_sessions", "host_leases", "job_weights",
	"fleet_leases", "fleet_rooms", "fleet_shares", "fleet_events"}

// IntegrityCheck asks the server what it can tell cheaply: that the
// database answers, that its schema is the version this program writes,
// that every table of the journal is there and that none of their indexes
// is marked invalid (an index build that failed). PostgreSQL checks pages
// itself as it reads them; a full check is its own tools' (amcheck).
func (s *Store) IntegrityCheck(ctx context.Context) error {
	var problems []string
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
			return err
		}
		version, _, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if want := SchemaVersion(); version != want {
			problems = append(problems, fmt.Sprintf("schema version %d, not this program's %d", version, want))
		}
		missing, err := sqlstore.QueryAll(ctx, db{tx}, scanString, `SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL`, journalTables)
		if err != nil {
			return err
		}
		for _, t := range missing {
			problems = append(problems, "table "+t+" is missing")
		}
		invalid, err := sqlstore.QueryAll(ctx, db{tx}, scanString, `SELECT i.indexrelid::regclass::text FROM pg_index i
			WHERE NOT i.indisvalid AND i.indrelid = ANY (
				SELECT to_regclass(t) FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL)`, journalTables)
		if err != nil {
			return err
		}
		for _, ix := range invalid {
			problems = append(problems, "index "+ix+" is invalid (rebuild it with REINDEX)")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("integrity check of %s: %w", s.where, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("journal %s is damaged: %s", s.where, strings.Join(problems, "; "))
	}
	return nil
}

func scanString(sc sqlstore.Row) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}
