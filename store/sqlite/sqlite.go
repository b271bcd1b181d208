// Package sqlite owns the journal kept in one SQLite file: store.Store and
// store.Fleet over mattn/go-sqlite3 (cgo), with its own embedded migrations.
// It is the single host's store; store/postgres is the one a fleet shares.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	// The SQLite driver (cgo). Without cgo it registers a stub whose Open
	// fails; Open turns that into an error that says how to fix it.
	_ "github.com/mattn/go-sqlite3"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
	"github.com/runner-manager/runner-manager/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the journal in one SQLite file, in WAL mode: a single writer
// connection (so writes queue in the process instead of failing busy) and a
// separate pool of query-only readers that never wait for the writer.
//
// Times are stored as unix nanoseconds and come back in UTC; compare them
// with time.Equal. The journal is safe against a process crash at any point
// (a killed process loses nothing it committed); with synchronous=NORMAL a
// power loss may lose the last transactions, never consistency.
type Store struct {
	// journal runs the statements shared with PostgreSQL (sqlstore).
	*journal

	// Now is the clock for the stamps the store writes itself (a policy's
	// UpdatedAt, a zero CreatedAt). Set it before first use; nil means
	// time.Now.
	Now func() time.Time

	path     string
	tempDir  string // removed on Close (OpenInMemory)
	readOnly bool   // opened with ReadOnly: no writer, no migrations
	w        *sql.DB
	r        *sql.DB

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Option configures Open.
type Option func(*openOptions)

type openOptions struct {
	log      *slog.Logger
	readOnly bool
}

// ReadOnly opens an existing journal for reading only, as commands that
// only look do where the data directory cannot be written: nothing is
// created or migrated, every write fails with ErrReadOnly, and a journal
// whose schema is older than this program's is refused (its queries would
// name columns it lacks) with an error that says how to upgrade it.
func ReadOnly() Option {
	return func(o *openOptions) { o.readOnly = true }
}

// ErrReadOnly: a write to a journal opened with ReadOnly.
var ErrReadOnly = rm.NewError(rm.ClassLocalState, "the journal is open read-only")

// WithLogger sets where Open warns of what it found (an empty journal
// file); by default nowhere.
func WithLogger(log *slog.Logger) Option {
	return func(o *openOptions) { o.log = log }
}

// Open opens (creating if needed) the journal at path and brings its
// schema up to date. A new file is created readable by its owner only (0600;
// SQLite gives the -wal and -shm files the same mode). The parent directory
// must exist.
//
// An existing but empty file is a journal that lost its contents (or one
// created and never written): it starts fresh, with a warning, unless its
// -wal sibling holds data, which shows the journal had some. Then Open
// refuses, writing nothing, so the WAL can still be recovered.
func Open(path string, opts ...Option) (*Store, error) {
	o := openOptions{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if o.readOnly {
		return openReadOnly(abs)
	}
	if err := checkEmpty(abs, o.log); err != nil {
		return nil, err
	}
	if err := createPrivate(abs); err != nil {
		return nil, fmt.Errorf("open journal: %w (does its directory exist and is it writable?)", err)
	}
	// Two processes opening a new journal at once contend for the switch
	// to WAL and for the first migration's lock, where SQLite answers
	// "database is locked" at once instead of calling the busy handler
	// (it would deadlock otherwise): such an open is tried again, for up
	// to about the busy timeout.
	deadline := time.Now().Add(5 * time.Second)
	for try := 0; ; try++ {
		s := &Store{path: abs}
		err := s.open(context.Background())
		if err == nil {
			s.journal = s.newJournal()
			return s, nil
		}
		_ = s.closeDBs()
		if !isBusy(err) || time.Now().After(deadline) {
			return nil, err
		}
		// 5 ms doubling to 200 ms, plus as much again at random.
		time.Sleep(backoff.Policy{Base: 10 * time.Millisecond, Cap: 400 * time.Millisecond}.Wait(try))
	}
}

// isBusy is SQLite's "database is locked" (SQLITE_BUSY), by its message:
// the driver's typed error exists only in cgo builds.
func isBusy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// OpenInMemory opens a journal that does not outlive Close: for tests,
// demos and dry runs. It is an ordinary journal file in a fresh private
// temporary directory that Close removes (an in-memory SQLite database can
// neither use WAL nor be shared by a writer and a pool of readers).
func OpenInMemory() (*Store, error) {
	dir, err := os.MkdirTemp("", "runner-manager-journal-")
	if err != nil {
		return nil, fmt.Errorf("open in-memory journal: %w", err)
	}
	s, err := Open(filepath.Join(dir, "journal.db"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.tempDir = dir
	return s, nil
}

// Path is the journal file's absolute path.
func (s *Store) Path() string { return s.path }

// checkEmpty warns of an existing, empty journal file, and refuses one whose
// -wal sibling holds data: SQLite would take the empty file for a new
// database and the WAL's transactions would be lost for good.
func checkEmpty(path string, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 0 || !fi.Mode().IsRegular() {
		return nil // missing (a new journal), or SQLite's to judge
	}
	wal := path + "-wal"
	if wi, err := os.Stat(wal); err == nil && wi.Size() > 0 {
		return fmt.Errorf("open journal %s: the file is empty but %s holds %d bytes, so the journal had data; nothing was written. "+
			"Restore %s from a backup (with its -wal file), or move both files aside to start a fresh journal",
			path, filepath.Base(wal), wi.Size(), filepath.Base(path))
	}
	log.Warn("the journal file is empty: starting a fresh journal, with no policies and no history", "path", path)
	return nil
}

// createPrivate creates path with mode 0600 unless it exists.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// fileURI is path as an SQLite URI with query q.
func fileURI(path string, q string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	return "file:" + (&url.URL{Path: p}).EscapedPath() + "?" + q
}

// Pragmas go in the DSN: an Exec after Open would reach one pooled
// connection only.
const (
	writerParams = "mode=rwc&_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on&_synchronous=NORMAL&_txlock=immediate"
	readerParams = "mode=ro&_query_only=true&_busy_timeout=5000"
)

func (s *Store) open(ctx context.Context) error {
	var err error
	s.w, err = sql.Open("sqlite3", fileURI(s.path, writerParams))
	if err != nil {
		return s.openErr(err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.openErr(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("open journal %s: journal_mode is %q, not wal: the file system may not support WAL (shared memory); keep the journal on a local disk", s.path, mode)
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("open journal %s: %w", s.path, err)
	}

	s.r, err = sql.Open("sqlite3", fileURI(s.path, readerParams))
	if err != nil {
		return s.openErr(err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(n)
	s.r.SetMaxIdleConns(n)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	if err := s.r.PingContext(ctx); err != nil {
		return s.openErr(err)
	}
	return nil
}

// openReadOnly opens the journal at path for reading only (ReadOnly). A
// journal in WAL mode is read through its -shm index, which SQLite creates
// beside it when missing: in a directory nobody may write, it opens the file
// as immutable instead, when no -wal file holds transactions (a daemon that
// stopped cleanly leaves none), so nothing is read stale.
func openReadOnly(path string) (*Store, error) {
	ctx := context.Background()
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open journal %s read-only: %w", path, err)
	}
	try := func(params string) (*Store, int, error) {
		s := &Store{path: path, readOnly: true}
		var err error
		if s.r, err = sql.Open("sqlite3", fileURI(path, params)); err != nil {
			return nil, 0, s.openErr(err)
		}
		n := max(4, runtime.GOMAXPROCS(0))
		s.r.SetMaxOpenConns(n)
		s.r.SetMaxIdleConns(n)
		var have int
		if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
			_ = s.r.Close()
			return nil, 0, s.openErr(err)
		}
		s.w = s.r // writes fail: the connections are query-only
		return s, have, nil
	}
	s, have, err := try(readerParams)
	if err != nil {
		if fi, werr := os.Stat(path + "-wal"); werr == nil && fi.Size() > 0 {
			return nil, fmt.Errorf("%w (its -wal file holds transactions that only a writer can read back: open it once where its directory is writable)", err)
		}
		if s, have, err = try(readerParams + "&immutable=1"); err != nil {
			return nil, err
		}
	}
	switch newest := SchemaVersion(); {
	case have > newest:
		_ = s.closeDBs()
		return nil, fmt.Errorf("open journal %s: it has schema version %d, newer than this program's %d: upgrade runner-manager", path, have, newest)
	case have < newest:
		_ = s.closeDBs()
		return nil, fmt.Errorf("open journal %s read-only: it has schema version %d, older than this program's %d; a command that writes (or the daemon) upgrades it where its directory is writable", path, have, newest)
	}
	s.journal = s.newJournal()
	return s, nil
}

// ReadOnly reports whether the journal was opened with ReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

func (s *Store) openErr(err error) error {
	if strings.Contains(err.Error(), "CGO_ENABLED=0") {
		return fmt.Errorf("open journal %s: this program was built without cgo, and the SQLite journal needs it: rebuild with CGO_ENABLED=1 and a C compiler", s.path)
	}
	return fmt.Errorf("open journal %s: %w", s.path, err)
}

// migrations returns the embedded steps in order (ReadMigrations).
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

// migrate applies the migrations the file lacks in one immediate
// transaction, reading and stamping user_version inside it so two processes
// opening one journal at once cannot both apply a step.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var have int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		newest := ms[len(ms)-1].Version
		if have > newest {
			return fmt.Errorf("the journal has schema version %d, newer than this program's %d: upgrade runner-manager", have, newest)
		}
		if have == newest {
			return nil
		}
		for _, m := range ms {
			if m.Version <= have {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		// PRAGMA takes no parameters; the value is our own integer.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", newest)); err != nil {
			return fmt.Errorf("stamp schema version: %w", err)
		}
		return nil
	})
}

// write runs fn in an immediate transaction on the writer connection.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("journal %s: %w", s.path, ErrReadOnly)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// IntegrityCheck runs SQLite's integrity check over the whole file and
// returns an error listing what it found wrong.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check of %s: %w", s.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check of %s: %w", s.path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check of %s: %w", s.path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("journal %s is damaged: %s", s.path, strings.Join(problems, "; "))
	}
	return nil
}

// Close closes the readers, then the writer (the last connection
// checkpoints the WAL into the file), and removes an in-memory journal.
// Closing twice is harmless.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.w != nil && !s.readOnly {
			// Keep the planner's statistics fresh; cheap, and harmless if
			// it fails.
			_, _ = s.w.Exec("PRAGMA optimize")
		}
		s.closeErr = s.closeDBs()
		if s.tempDir != "" {
			if err := os.RemoveAll(s.tempDir); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil && s.w != s.r {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close journal %s: %w", s.path, err)
	}
	return nil
}
