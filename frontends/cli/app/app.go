package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/logredact"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
)

// App is what every command is given: the parsed global flags, the
// streams, and the configuration, journal and host, opened on first use and
// closed when the command returns.
type App struct {
	Streams
	cli  *CLI
	args []string
	// flags are command flags that override configuration keys
	// (run --metrics-addr), set by the command before Config is called.
	flags map[string]configfile.FlagValue

	// createsDataDir is set by the commands that may create a missing
	// data directory (init, run); the others refuse one, so that a
	// mistyped --data-dir does not start a second journal unnoticed.
	createsDataDir bool
	// serving is set by run: the daemon's GitHub client warns of each
	// retry, a one-shot command's logs them at debug.
	serving bool

	cfg     *configfile.File
	st      store.Store
	host    *rm.Host
	logger  *slog.Logger
	closers []func() error
}

// flagGiven reports whether the command line holds the flag name.
func (a *App) flagGiven(name string) bool {
	for _, arg := range a.args {
		if arg == "--" {
			return false
		}
		if arg == name || strings.HasPrefix(arg, name+"=") {
			return true
		}
	}
	return false
}

// Close closes what the command opened.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
	a.closers = nil
}

func (a *App) onClose(f func() error) { a.closers = append(a.closers, f) }

// setFlag makes a command flag override a configuration key.
func (a *App) setFlag(key, name, value string) {
	if value == "" {
		return
	}
	if a.flags == nil {
		a.flags = map[string]configfile.FlagValue{}
	}
	a.flags[key] = configfile.FlagValue{Value: value, Name: name}
}

// Config loads the configuration once: flag > environment > file > default.
func (a *App) Config() (*configfile.File, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	src := configfile.Sources{Path: a.cli.Config, Explicit: a.cli.Config != ""}
	if src.Path == "" {
		p, err := configfile.DefaultConfigPath(nil)
		if err != nil {
			return nil, err
		}
		src.Path = p
	}
	src.Flags, src.Backends = map[string]configfile.FlagValue{}, backend.Configs()
	for k, v := range a.flags {
		src.Flags[k] = v
	}
	// Kong fills these from the flag or, failing that, the environment;
	// only a flag given on the command line is passed as a flag, so that
	// configfile.Load names the variable in its errors.
	for _, f := range []struct{ key, name, value string }{
		{"data_dir", "--data-dir", a.cli.DataDir},
		{"log.format", "--log-format", a.cli.LogFormat},
		{"log.level", "--log-level", a.cli.LogLevel},
		{"store.url", "--store", a.cli.Store},
	} {
		if f.value != "" && a.flagGiven(f.name) {
			src.Flags[f.key] = configfile.FlagValue{Value: f.value, Name: f.name}
		}
	}
	c, err := configfile.Load(src)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	a.cfg = c
	return c, nil
}

// ConfigPath is the configuration file in use or, when there is none, where
// `init` writes one.
func (a *App) ConfigPath() (string, error) {
	if a.cli.Config != "" {
		return filepath.Abs(a.cli.Config)
	}
	return configfile.DefaultConfigPath(nil)
}

// Logger logs to standard error as the configuration says.
func (a *App) Logger() *slog.Logger {
	if a.logger != nil {
		return a.logger
	}
	format, level := "text", "info"
	if c, err := a.Config(); err == nil {
		format, level = c.Log.Format, c.Log.Level
	}
	a.logger = NewLogger(a.Stderr, format, level)
	return a.logger
}

// NewLogger returns an slog logger writing text or json at level, every
// record through the credential redactor last (logredact).
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(logredact.NewHandler(h))
}

// DataDir returns the data directory, created (0700) if missing by the
// commands that may create one (init, run); the others refuse a missing one.
func (a *App) DataDir() (string, error) {
	c, err := a.Config()
	if err != nil {
		return "", err
	}
	if !a.createsDataDir {
		if _, err := os.Stat(c.DataDir); errors.Is(err, fs.ErrNotExist) {
			return "", noDataDir(c.DataDir)
		}
	}
	if err := ensurePrivateDir(c.DataDir); err != nil {
		return "", err
	}
	return c.DataDir, nil
}

// ensurePrivateDir creates dir and its state/ subdirectory with mode 0700.
func ensurePrivateDir(dir string) error {
	if err := dataDirProblem(dir); err != nil {
		return err
	}
	if err := datadir.New(dir).Create(); err != nil {
		return fmt.Errorf("create the data directory: %w (give another with --data-dir)", err)
	}
	// MkdirAll leaves an existing directory's mode alone; a new one may be
	// widened by nothing but our umask, which cannot add bits.
	return nil
}

// Store opens the journal the configuration names ([store] url, --store,
// $RUNNER_MANAGER_STORE): <data>/journal.db by default, or a PostgreSQL
// database (daemon.OpenStore).
func (a *App) Store(ctx context.Context) (store.Store, error) {
	if a.st != nil {
		return a.st, nil
	}
	if err := a.checkStoreFlag(); err != nil {
		return nil, err
	}
	c, err := a.Config()
	if err != nil {
		return nil, err
	}
	sc := daemon.StoreConfigOf(c)
	if !sc.Postgres() {
		// The SQLite journal lives in the data directory; a PostgreSQL
		// store is opened before anything is made here, so that a bad URL,
		// a server down or a wrong password leaves nothing behind.
		if _, err := a.DataDir(); err != nil {
			return nil, err
		}
	}
	st, err := daemon.OpenStore(ctx, c.DataDir, sc, a.Logger())
	if err != nil {
		if !sc.Postgres() {
			return nil, journalOpenError(c.DataDir, err)
		}
		return nil, err
	}
	a.st = storeOpened(st)
	a.onClose(st.Close)
	return a.st, nil
}

// storeOpened is the store a command works on, given the one opened (the
// identity; tests stand a fleet store's boundary over the SQLite journal).
var storeOpened = func(st store.Store) store.Store { return st }

// ExistingStore opens the journal only if it exists: commands that only
// read say so instead of creating an empty data directory. A PostgreSQL
// store is opened as it is (its errors say what is wrong).
func (a *App) ExistingStore(ctx context.Context) (store.Store, error) {
	if _, _, err := a.existingJournal(); err != nil {
		return nil, err
	}
	return a.Store(ctx)
}

// checkStoreFlag refuses a password in --store: every user of the machine
// can read a command line.
func (a *App) checkStoreFlag() error {
	if a.cli.Store == "" || !a.flagGiven("--store") {
		return nil
	}
	if u, err := url.Parse(a.cli.Store); err == nil {
		_, inUser := u.User.Password()
		if inUser || u.Query().Has("password") {
			return invalidArgf("--store %s holds a password, which every user of this machine can read on the command line: give the URL without it, and the password in $%s or [store] password_file",
				postgres.Describe(a.cli.Store), configfile.StorePasswordEnv)
		}
	}
	return nil
}

// Host returns this host, from <data>/state/host-id (created on first
// use) and the machine's facts, recorded in the journal.
func (a *App) Host(ctx context.Context) (rm.Host, error) {
	if a.host != nil {
		return *a.host, nil
	}
	st, err := a.Store(ctx) // first: a store that cannot be opened leaves nothing behind
	if err != nil {
		return rm.Host{}, err
	}
	dir, err := a.DataDir()
	if err != nil {
		return rm.Host{}, err
	}
	c, err := a.Config()
	if err != nil {
		return rm.Host{}, err
	}
	h, err := daemon.NamedLocalHost(dir, c.Host.Name)
	if err != nil {
		return rm.Host{}, err
	}
	if err := st.PutHost(ctx, h); err != nil {
		return rm.Host{}, fmt.Errorf("record this host in the journal: %w", err)
	}
	a.host = &h
	return h, nil
}

// Daemon is a client of the daemon serving the data directory.
func (a *App) Daemon() (*localapi.Client, error) {
	c, err := a.Config()
	if err != nil {
		return nil, err
	}
	if err := dataDirProblem(c.DataDir); err != nil {
		return nil, err
	}
	return localapi.NewClient(c.DataDir), nil
}

// pokeDaemon tells a running daemon that policies changed; it is quiet
// when none runs (the daemon re-reads policies on start).
func (a *App) pokeDaemon(ctx context.Context) {
	d, err := a.Daemon()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := d.Refresh(ctx); err != nil && !errors.Is(err, localapi.ErrNotRunning) {
		a.Logger().Warn("the daemon did not take the change now; it re-reads policies within seconds", "err", err)
	}
}

func (a *App) printf(format string, args ...any) { fmt.Fprintf(a.Stdout, format, args...) }
