package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

// journal is the statements SQLite shares with PostgreSQL.
type journal = sqlstore.Journal

// dialect is how SQLite differs in them.
var dialect = sqlstore.Dialect{
	// INDEXED BY fails rather than scan the table when the index cannot
	// serve the query.
	Hint: func(index string) string { return " INDEXED BY " + index },
	Seq:  "rowid",
	// A removed policy's row is named '~' and its id, so that its name is
	// free (migration 0008); removed_name keeps the name it had.
	PolicyName:   "CASE WHEN removed_at IS NULL THEN name ELSE removed_name END",
	RemovedName:  "removed_name",
	RemovePolicy: `UPDATE policies SET removed_at = ?, removed_name = name, name = '~' || id WHERE id = ?`,
	Heartbeat:    `UPDATE hosts SET seen_at = max(coalesce(seen_at, 0), ?) WHERE id = ?`,
	Labels: sqlstore.ListCodec{
		Arg: func(list []string) any { return strings.Join(list, ",") },
		Dest: func() (any, func() ([]string, error)) {
			var s string
			return &s, func() ([]string, error) {
				if s == "" {
					return nil, nil
				}
				return strings.Split(s, ","), nil
			}
		},
	},
	Names: sqlstore.ListCodec{Arg: toJSONList, Dest: jsonListDest},
	// Only hosts sharing one database can serve a policy together.
	NoFleet: "this journal is SQLite, one host's",
}

// toJSONList is list as a JSON array, "" when empty.
func toJSONList(list []string) any {
	if len(list) == 0 {
		return ""
	}
	b, _ := json.Marshal(list) // strings always marshal
	return string(b)
}

// jsonListDest reads what toJSONList wrote.
func jsonListDest() (any, func() ([]string, error)) {
	var s string
	return &s, func() ([]string, error) {
		if s == "" {
			return nil, nil
		}
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, err
		}
		return list, nil
	}
}

// db runs the shared statements on a connection pool or a transaction.
type db struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

var _ sqlstore.DB = db{}

func (d db) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := d.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (d db) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return d.q.QueryRowContext(ctx, query, args...)
}

func (d db) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := d.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sqlRows are database/sql's rows, closed without an error to report
// (Err has it).
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// newJournal builds the shared statements over s's connections: reads on
// the readers, writes on the writer.
func (s *Store) newJournal() *journal {
	return sqlstore.New(sqlstore.Config{
		Dialect: dialect,
		Read:    db{s.r},
		Write:   db{s.w},
		Tx: func(ctx context.Context, fn func(sqlstore.DB) error) error {
			return s.write(ctx, func(tx *sql.Tx) error { return fn(db{tx}) })
		},
		Now: s.now,
	})
}
