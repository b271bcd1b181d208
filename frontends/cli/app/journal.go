package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

// dirWritable tells whether files can be created in dir
// (datadir.Dir.Writable). Tests replace it.
var dirWritable = func(dir string) error { return datadir.New(dir).Writable() }

// noJournal is the error of a command run where no journal is: the data
// directory given is the wrong one or nothing was set up there yet (local
// state).
func noJournal(dir string) error {
	return withTry(fmt.Errorf("no journal in %s: nothing ran here yet (run `runner-manager init`, or give the right --data-dir or --store)%w", dir, silentErr{errLocalState}), "init")
}

// noDataDir is the error of a command that writes, given a data directory
// that does not exist: only init and run create one (local state).
func noDataDir(dir string) error {
	return withTry(fmt.Errorf("data dir %s does not exist: set this host up with `runner-manager init` (with the same --data-dir or --config), or give the right --data-dir%w", dir, silentErr{errLocalState}), "init")
}

// dataDirProblem says what is wrong with the data directory's path, when
// something is: a file where the directory should be, or a directory this
// user may not enter. Without it the first thing to trip would name a
// socket or a journal file inside ("dial unix …/manager.sock: not a
// directory"), and not the path the person gave. A directory that does not
// exist yet is no problem: the commands that write create it.
func dataDirProblem(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrPermission):
		return dataDirUnreadable(dir)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("data dir %s: a part of its path is a file, not a directory: give a directory with --data-dir%w", dir, silentErr{errLocalState})
	case err != nil:
		return fmt.Errorf("data dir %s: %w (give another with --data-dir)", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("data dir %s is a file, not a directory: give a directory with --data-dir%w", dir, silentErr{errLocalState})
	}
	// Entering the directory is what every command needs (the journal,
	// the daemon's socket); reading its listing is not.
	if _, err := os.Lstat(datadir.New(dir).Journal()); errors.Is(err, fs.ErrPermission) {
		return dataDirUnreadable(dir)
	}
	return nil
}

func dataDirUnreadable(dir string) error {
	return fmt.Errorf("data dir %s cannot be read by this user (permission denied): run as its owner, or give another with --data-dir%w", dir, silentErr{errLocalState})
}

// existingJournal returns the journal's path in the data directory, or
// noJournal when it has none (creating nothing).
func (a *App) existingJournal() (dir, path string, err error) {
	c, err := a.Config()
	if err != nil {
		return "", "", err
	}
	if sc := daemon.StoreConfigOf(c); sc.Postgres() {
		// A PostgreSQL store is opened as it is: its errors say what is
		// wrong, and nothing of it lives in the data directory.
		return c.DataDir, "", nil
	}
	if err := dataDirProblem(c.DataDir); err != nil {
		return "", "", err
	}
	path = datadir.New(c.DataDir).Journal()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", "", noJournal(c.DataDir)
	}
	return c.DataDir, path, nil
}

// ReadStore opens the journal for a command that only reads it (status,
// policy list and show, attempts, logs, tui). It must exist; where the data
// directory cannot be written (a read-only mount, a directory of another
// user), it is opened read-only, and the command says so on standard error.
func (a *App) ReadStore(ctx context.Context) (store.Store, error) {
	if a.st != nil {
		return a.st, nil
	}
	dir, path, err := a.existingJournal()
	if err != nil {
		return nil, err
	}
	if path == "" { // a PostgreSQL store: nothing of it in the data directory
		return a.Store(ctx)
	}
	probe := dirWritable(dir)
	if probe == nil {
		return a.Store(ctx)
	}
	st, err := sqlite.Open(path, sqlite.ReadOnly())
	if err != nil {
		return nil, fmt.Errorf("data dir %s is read-only (%v), and the journal could not be read there: %w", dir, probe, err)
	}
	fmt.Fprintf(a.Stderr, "note: data dir %s is read-only (%v): the journal is open for reading only\n", dir, probe)
	a.st = storeOpened(st)
	a.onClose(st.Close)
	return a.st, nil
}

// journalOpenError names the real cause of a journal that would not open
// for writing: a data directory that cannot be written, rather than what
// SQLite says of it ("attempt to write a readonly database", "unable to
// open database file").
func journalOpenError(dir string, err error) error {
	if probe := dirWritable(dir); probe != nil {
		return fmt.Errorf("data dir %s is read-only (%v): this command writes the journal there; give a writable --data-dir, or make it writable by this user (read-only commands such as `status` and `policy list` still work)", dir, probe)
	}
	return fmt.Errorf("open the journal: %w", err)
}
