package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

// journal is the statements PostgreSQL shares with SQLite.
type journal = sqlstore.Journal

// dialect is how PostgreSQL differs in them.
var dialect = sqlstore.Dialect{
	// The planner finds the partial index from the query's predicate.
	Hint: func(string) string { return "" },
	Seq:  "seq",
	// Names are unique among the policies in force only (migration
	// 0005): a removed policy keeps its name.
	PolicyName:   "name",
	RemovedName:  "name",
	RemovePolicy: `UPDATE policies SET removed_at = ? WHERE id = ?`,
	Heartbeat:    `UPDATE hosts SET seen_at = GREATEST(seen_at, ?) WHERE id = ?`,
	Labels:       textArray,
	Names:        textArray,
	// The policy went meanwhile: another writer removed it.
	ForeignKeyViolation: func(err error) bool { return pgCode(err) == "23503" },
}

// textArray keeps a list in a TEXT[] column, NOT NULL: nil is stored as
// the empty array.
var textArray = sqlstore.ListCodec{
	Arg: func(list []string) any {
		if list == nil {
			return []string{}
		}
		return list
	},
	Dest: func() (any, func() ([]string, error)) {
		var list []string
		return &list, func() ([]string, error) { return list, nil }
	},
}

// db runs the shared statements, numbering their placeholders, on the
// pool or a transaction.
type db struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
}

var _ sqlstore.DB = db{}

func (d db) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := d.q.Query(ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (d db) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return d.q.QueryRow(ctx, rebind(query), args...)
}

func (d db) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, rebind(query), args...)
	return tag.RowsAffected(), err
}

// rebound caches the statements as rebind numbered them: they are a few
// dozen texts, each run over and over.
var rebound sync.Map

// rebind is sqlstore.Rebind, once per statement.
func rebind(query string) string {
	if q, ok := rebound.Load(query); ok {
		return q.(string)
	}
	q := sqlstore.Rebind(query)
	rebound.Store(query, q)
	return q
}

// newJournal builds the shared statements over s's pool, each write in
// a serializable transaction (write).
func (s *Store) newJournal() *journal {
	return sqlstore.New(sqlstore.Config{
		Dialect: dialect,
		Read:    db{s.pool},
		Write:   db{s.pool},
		Tx: func(ctx context.Context, fn func(sqlstore.DB) error) error {
			return s.write(ctx, func(tx pgx.Tx) error { return fn(db{tx}) })
		},
		Now: s.now,
	})
}
