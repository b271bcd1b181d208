package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

// StoreConfig says which journal a host keeps: the SQLite file in its data
// directory (URL ""), or a PostgreSQL database a fleet of hosts shares.
type StoreConfig struct {
	// URL is a postgres:// URL; "" is DataDir/journal.db. It may hold no
	// password when PasswordFile or $RUNNER_MANAGER_STORE_PASSWORD gives one.
	URL string
	// PasswordFile holds the database password, readable by its owner only
	// (a file its group or others may read is refused).
	// Without it or $RUNNER_MANAGER_STORE_PASSWORD the password comes from
	// the URL, else $PGPASSWORD or ~/.pgpass, as libpq finds it.
	PasswordFile string
}

// StoreConfigOf is the store the configuration's [store] names.
func StoreConfigOf(c *configfile.File) StoreConfig {
	return StoreConfig{URL: c.Store.URL, PasswordFile: c.Store.PasswordFile}
}

// Postgres reports whether the store is a PostgreSQL database.
func (sc StoreConfig) Postgres() bool { return sc.URL != "" }

// Where names the store for messages, never with a password: the journal
// file, or user@host/database.
func (sc StoreConfig) Where(dataDir string) string {
	if sc.URL == "" {
		return datadir.New(dataDir).Journal()
	}
	return "PostgreSQL " + postgres.Describe(sc.URL)
}

// Exists reports whether the store is there to be read without creating
// it: the journal file for SQLite; a PostgreSQL store always is (Open
// says otherwise).
func (sc StoreConfig) Exists(dataDir string) bool {
	if sc.URL != "" {
		return true
	}
	_, err := os.Stat(datadir.New(dataDir).Journal())
	return err == nil
}

// OpenStore opens the journal sc names: the SQLite file in dataDir, or the
// PostgreSQL database at sc.URL with its password from the password file,
// $RUNNER_MANAGER_STORE_PASSWORD, the URL, $PGPASSWORD or ~/.pgpass. Its
// schema is brought up to date. The errors are one line each, name the
// database without its password, and for PostgreSQL wrap
// postgres.ErrBadURL, ErrUnreachable, ErrAuth or ErrSchemaTooNew; then
// nothing was written.
func OpenStore(ctx context.Context, dataDir string, sc StoreConfig, logger *slog.Logger) (store.Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if sc.URL == "" {
		if sc.PasswordFile != "" {
			return nil, errors.New("a store password file is set but no store URL: the password is for a PostgreSQL store ([store] url, --store or $RUNNER_MANAGER_STORE)")
		}
		st, err := sqlite.Open(datadir.New(dataDir).Journal(), sqlite.WithLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("open the journal: %w", err)
		}
		return st, nil
	}
	var opts []postgres.Option
	pw, fromEnv := os.LookupEnv(configfile.StorePasswordEnv)
	fromEnv = fromEnv && pw != ""
	switch {
	case sc.PasswordFile != "" && fromEnv:
		return nil, fmt.Errorf("%w: %s: both [store] password_file and $%s give a password: keep one",
			postgres.ErrBadURL, postgres.Describe(sc.URL), configfile.StorePasswordEnv)
	case sc.PasswordFile != "":
		opts = append(opts, postgres.WithPasswordFile(sc.PasswordFile))
	case fromEnv:
		opts = append(opts, postgres.WithPasswordEnv(configfile.StorePasswordEnv))
	}
	st, err := postgres.Open(ctx, sc.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	logger.Info("journal in PostgreSQL", "store", st.Where())
	return st, nil
}

// storeName names a store for the logs: "sqlite", or PostgreSQL's
// user@host/database.
func storeName(st store.Store) string {
	switch s := st.(type) {
	case *postgres.Store:
		return "postgres " + s.Where()
	case *sqlite.Store:
		return "sqlite"
	}
	return fmt.Sprintf("%T", st)
}
