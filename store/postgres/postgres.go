// Package postgres owns the journal kept in a PostgreSQL database, the
// store a fleet of hosts shares: store.Store over pgx (a connection pool),
// with its own embedded migrations. Its semantics are the SQLite journal's,
// method for method, as the conformance suite store/storetest checks.
//
// Times are stored as unix nanoseconds (BIGINT) and come back in UTC, as
// SQLite's do, so a value read back equals the one written; uint64
// quantities are stored as their int64 bit pattern.
//
// Every write is one SERIALIZABLE transaction, retried when PostgreSQL
// reports a serialization failure or a deadlock: concurrent writers, in one
// process or on many hosts, behave as if they ran one after another, as
// SQLite's single writer does. The statements both share are
// store/internal/sqlstore's, run through write; this package keeps its
// own where PostgreSQL differs: connecting, migrations, retries, the
// integrity check and the fleet's percentiles, computed in the server.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runner-manager/runner-manager/internal/backoff"
	"github.com/runner-manager/runner-manager/store"
)

// Store is the journal in a PostgreSQL database. It is safe for concurrent
// use, by this process and by others (other hosts) at once.
type Store struct {
	// journal runs the statements shared with SQLite (sqlstore).
	*journal

	pool  *pgxpool.Pool
	url   string // redacted
	where string // Describe's: for messages
	now   func() time.Time

	closeOnce sync.Once

	// probe is listenProbe when the store was opened.
	probe time.Duration
	// mu guards the fleet's listeners (ListenFleet), which Close ends.
	mu           sync.Mutex
	closed       bool
	listeners    map[int]context.CancelFunc
	nextListener int
	listening    sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at rawURL (postgres://user@host:port/db, or
// postgres://user@/db?host=/socket/dir), checks that it can log in, and
// brings the schema up to date. The password comes from the URL, or from
// the options. Errors wrap ErrBadURL, ErrUnreachable, ErrAuth or
// ErrSchemaTooNew, and never carry the password.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := poolConfig(rawURL, o)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadURL, Describe(rawURL), scrub(err.Error(), rawURL, cfg.ConnConfig.Password))
	}
	s := &Store{pool: pool, url: Redact(rawURL), where: Describe(rawURL), now: o.now, probe: listenProbe}
	s.journal = s.newJournal()
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(ctx, err, rawURL, cfg.ConnConfig.Password)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open the store at %s: %w", s.where, err)
	}
	return s, nil
}

// URL is the store's URL without its password.
func (s *Store) URL() string { return s.url }

// Where names the store's database as user@host/database (Describe), for
// messages and logs.
func (s *Store) Where() string { return s.where }

// Close ends the fleet's listeners and closes the pool's connections;
// closing twice is harmless.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.endListeners()
		s.pool.Close()
	})
	return nil
}

// maxTries bounds the retries of a write that keeps meeting concurrent
// writers.
const maxTries = 20

// conflictPause spreads the tries of writers that conflicted: 2 ms
// doubling to 64 ms, fully jittered.
var conflictPause = backoff.Policy{Base: 2 * time.Millisecond, Cap: 64 * time.Millisecond}

// write runs fn in a SERIALIZABLE transaction, retrying it while
// PostgreSQL says it conflicted with another (fn must only touch the
// database: it may run more than once).
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for try := 1; ; try++ {
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, fn)
		if err == nil || try == maxTries || !retryable(err) {
			return err
		}
		// A short, jittered, growing pause lets the other writer finish.
		wait := conflictPause.Spread(try-1) + 100*time.Microsecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// retryable: the transaction lost a race with another and can be run again
// (serialization failure, deadlock, a unique key taken by a concurrent
// insert that the transaction's own checks will see next time), or its
// connection failed before anything was sent.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", "40P01", "23505":
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

// pgCode is err's SQLSTATE, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Analyze refreshes the planner's statistics of the store's tables, as
// autovacuum does in time; after a bulk load, so that the first queries
// are planned from what the tables hold.
func Analyze(ctx context.Context, s *Store) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE hosts, policies, attempts, scale_set_sessions, host_leases,
		fleet_leases, fleet_rooms, fleet_shares, fleet_events`); err != nil {
		return fmt.Errorf("analyze the store at %s: %w", s.where, err)
	}
	return nil
}
