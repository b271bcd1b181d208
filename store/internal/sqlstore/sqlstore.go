// Package sqlstore owns the statements the SQL journals share: store.Store
// and most of store.Fleet written once, over a small DB interface that
// store/sqlite (database/sql) and store/postgres (pgx) each adapt. A
// dialect gives what must differ (a Dialect: index hints, how a removed
// policy keeps its name, list columns) and keeps its own statements where
// the databases part ways: opening, migrations, transactions and their
// retries, integrity checks, the fleet's percentiles.
//
// Statements are written with ? placeholders; a dialect numbering them
// ($1, $2…) rewrites them with Rebind in its DB.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Row is one row of a query, or its error.
type Row interface {
	Scan(dest ...any) error
}

// Rows are the rows of a query.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// DB runs statements: a dialect's connection pool or one of its
// transactions. A query that finds no row returns an error that is
// sql.ErrNoRows (errors.Is).
type DB interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Exec returns how many rows the statement changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// ListCodec is how a dialect keeps a list of strings in one column.
type ListCodec struct {
	// Arg is the list as its column's argument.
	Arg func(list []string) any
	// Dest returns where Scan puts the column, and how to read the list
	// from there once it did.
	Dest func() (dest any, list func() ([]string, error))
}

// Dialect is what differs between the SQL databases in the statements
// they share.
type Dialect struct {
	// Hint follows a table's name in FROM to make the query read that
	// index (SQLite's INDEXED BY, which fails rather than scan the
	// table); "" where the planner finds it alone.
	Hint func(index string) string
	// Seq is the column that orders attempts created in one nanosecond:
	// the order they were inserted in.
	Seq string
	// PolicyName reads a policy's name, removed or not, and RemovedName
	// is the column that orders removed policies by their name.
	PolicyName, RemovedName string
	// RemovePolicy marks a policy removed (arguments: removed_at, id),
	// freeing its name for the policies in force.
	RemovePolicy string
	// Heartbeat moves a host's seen_at forward, never back (arguments:
	// the time, the host's id).
	Heartbeat string
	// Labels keeps a policy's labels; Names its container's environment
	// names and volumes, and its VM's forwards.
	Labels, Names ListCodec
	// ForeignKeyViolation tells an error of a write that named a row
	// gone meanwhile (a policy removed by another writer); nil if a
	// write never meets one.
	ForeignKeyViolation func(error) bool
	// NoFleet says why the journal refuses fleet policies (rm.Policy.Fleet),
	// for the error: "this journal is SQLite, one host's". "" if it keeps
	// them.
	NoFleet string
}

// Config is what a Journal runs on.
type Config struct {
	Dialect
	// Read runs the queries that only read.
	Read DB
	// Write runs a write of one statement, outside a transaction.
	Write DB
	// Tx runs fn in one transaction that writes, committed if fn returns
	// nil. fn may be run again (a transaction retried after a
	// serialization failure), so it must only touch the database.
	Tx func(ctx context.Context, fn func(DB) error) error
	// Now is the clock of the stamps the journal writes itself.
	Now func() time.Time
}

// Journal implements store.Store but IntegrityCheck and Close, and
// store.Fleet but Weights and HeaviestJobs, with the statements both SQL
// dialects share; a dialect's store embeds it.
type Journal struct {
	c            Config
	activeQuery  string
	liveQuery    string
	policyFields string
}

// New returns the journal c describes.
func New(c Config) *Journal {
	return &Journal{
		c:            c,
		activeQuery:  ActiveAttemptsQuery(c.Dialect),
		liveQuery:    LiveAttemptsQuery(c.Dialect),
		policyFields: policyColumns(c.Dialect),
	}
}

// noRows: the query found no row.
func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// nanos is t as unix nanoseconds, or NULL for the zero time.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// stamp scans unix nanoseconds, or NULL for the zero time, into a time
// in UTC: the inverse of nanos.
type stamp struct{ t *time.Time }

func (s stamp) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s.t = time.Time{}
	case int64:
		*s.t = time.Unix(0, v).UTC()
	default:
		return fmt.Errorf("cannot scan %T into a time: times are stored as unix nanoseconds", src)
	}
	return nil
}

// at is where a scan puts a time stored by nanos.
func at(t *time.Time) stamp { return stamp{t} }

// QueryAll runs a query and scans every row with scan.
func QueryAll[T any](ctx context.Context, db DB, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, query, args...)
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
