package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

// OpenStore opens the journal a configuration names, for the TUI to read
// and to write its policy edits to; a note for the user (a journal open
// for reading only) goes to stderr. The program running Main passes the
// one whose database drivers it links: runner-manager-tui passes
// OpenSQLite, so that it links no PostgreSQL driver.
type OpenStore func(ctx context.Context, cfg *configfile.File, stderr io.Writer) (store.Store, error)

// ErrUsage marks an OpenStore error the user fixes with other flags, a
// setup step or another program (no journal in the data directory, a
// store this program does not open): Main exits with status 2 on it.
var ErrUsage = errors.New("usage")

// usageError is an error wrapping ErrUsage that reads as err alone.
type usageError struct{ error }

func (usageError) Is(target error) bool { return target == ErrUsage }
func (e usageError) Unwrap() error      { return e.error }

// OpenSQLite opens the SQLite journal of cfg's data directory, read-only
// (with a note) where the directory cannot be written. A configuration
// naming a PostgreSQL store ([store] url) is refused with an error wrapping
// ErrUsage that names `runner-manager tui`, which links the driver.
func OpenSQLite(_ context.Context, cfg *configfile.File, stderr io.Writer) (store.Store, error) {
	if cfg.Store.URL != "" {
		return nil, usageError{errors.New("the journal is in PostgreSQL ([store] url or $RUNNER_MANAGER_STORE), and runner-manager-tui opens SQLite journals only: run `runner-manager tui`, which links the PostgreSQL driver")}
	}
	dir := datadir.New(cfg.DataDir)
	journal := dir.Journal()
	if _, err := os.Stat(journal); errors.Is(err, fs.ErrNotExist) {
		return nil, usageError{fmt.Errorf("no journal in %s: run `runner-manager init` there first, or give the right --data-dir", cfg.DataDir)}
	}
	if probe := dir.Writable(); probe != nil {
		// A data dir this user cannot write (a read-only mount, another
		// user's): the journal is read as it is; policy edits will fail.
		st, err := sqlite.Open(journal, sqlite.ReadOnly())
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "runner-manager-tui: note: data dir %s is read-only (%v): the journal is open for reading only\n", cfg.DataDir, probe)
		return st, nil
	}
	if cfg.Store.PasswordFile != "" {
		return nil, errors.New("a store password file is set but no store URL: the password is for a PostgreSQL store ([store] url, --store or $RUNNER_MANAGER_STORE)")
	}
	st, err := sqlite.Open(journal)
	if err != nil {
		return nil, fmt.Errorf("open the journal: %w", err)
	}
	return st, nil
}
