package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	rm "github.com/runner-manager/runner-manager"
)

// The errors Open returns, wrapped with detail; test with errors.Is. Each
// message names the server by its URL without the password.
var (
	// ErrBadURL: the URL is not a postgres:// URL pgx can parse, or the
	// password is given twice or cannot be read.
	ErrBadURL = rm.NewError(rm.ClassInvalid, "bad PostgreSQL URL")
	// ErrUnreachable: no server answered at the URL's address (down,
	// wrong host or port, no such socket, a timeout).
	ErrUnreachable = rm.NewError(rm.ClassLocalState, "PostgreSQL server unreachable")
	// ErrAuth: the server refused the user or its password.
	ErrAuth = rm.NewError(rm.ClassLocalState, "PostgreSQL refused the login")
	// ErrSchemaTooNew: the database's schema is newer than this program's;
	// nothing was written.
	ErrSchemaTooNew = rm.NewError(rm.ClassLocalState, "schema newer than this program")
)

// DefaultConnectTimeout bounds each connection attempt when the URL sets no
// connect_timeout, so a server that does not answer is an error in seconds.
const DefaultConnectTimeout = 10 * time.Second

// HealthCheckPeriod is how often the pool checks its idle connections
// (the URL's pool_health_check_period sets another).
const HealthCheckPeriod = 5 * time.Second

// Option configures Open.
type Option func(*options)

type options struct {
	passwordFile string
	passwordEnv  string
	now          func() time.Time
	tracer       pgx.QueryTracer
}

// WithPasswordFile reads the password from a file readable by its owner
// only (mode 0600 or stricter; a final newline is dropped). The URL must
// then hold no password.
func WithPasswordFile(path string) Option {
	return func(o *options) { o.passwordFile = path }
}

// WithPasswordEnv reads the password from the environment variable name.
// The URL must then hold no password. Without either option the password
// comes from the URL, else from PGPASSWORD or ~/.pgpass, as libpq does.
func WithPasswordEnv(name string) Option {
	return func(o *options) { o.passwordEnv = name }
}

// WithTracer has every statement the store sends traced by t (metrics,
// logs of slow queries, counting round trips). Its data holds the
// statements' arguments: a tracer must not log them where secrets matter.
func WithTracer(t pgx.QueryTracer) Option {
	return func(o *options) { o.tracer = t }
}

// WithClock sets the clock for the stamps the store writes itself; by
// default time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Redact returns the URL with its password (in the user part or in a
// password parameter) replaced by "xxxxx", for messages and logs.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return "(not a URL)" // perhaps key=value settings, a password among them
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// poolConfig parses rawURL and sets the password the options name.
func poolConfig(rawURL string, o options) (*pgxpool.Config, error) {
	u, err := url.Parse(rawURL)
	var uerr *url.Error
	if errors.As(err, &uerr) { // its message would quote the URL, password and all
		return nil, fmt.Errorf("%w: %s", ErrBadURL, scrub(uerr.Err.Error(), rawURL))
	}
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		got := "no URL"
		if err == nil && u.Scheme != "" {
			got = "a " + u.Scheme + ": URL"
		} else if strings.Contains(rawURL, "=") {
			got = "key=value settings"
		}
		return nil, fmt.Errorf("%w: want postgres://user@host:port/database (or postgres://user@/database?host=/socket/dir), got %s", ErrBadURL, got)
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadURL, Describe(rawURL), parseProblem(err, rawURL))
	}
	_, inURL := u.User.Password()
	inURL = inURL || u.Query().Has("password")
	pw, from, err := optionPassword(o)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadURL, Describe(rawURL), err)
	}
	if from != "" {
		if inURL {
			return nil, fmt.Errorf("%w: %s holds a password and %s gives another: keep one", ErrBadURL, Describe(rawURL), from)
		}
		cfg.ConnConfig.Password = pw
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	// A server restarted (or a network that dropped the connections) is
	// found by the pool's checks within seconds: idle connections are
	// checked this often, and each one idle for a second is pinged before
	// it is handed out (pgxpool's default), so a write after a restart
	// gets a fresh connection instead of a dead one.
	if !u.Query().Has("pool_health_check_period") {
		cfg.HealthCheckPeriod = HealthCheckPeriod
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["connect_timeout"]; !ok && !u.Query().Has("connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg, nil
}

// parseProblem is what pgx found wrong (its message quotes the URL with
// the password redacted), scrubbed of the password all the same.
func parseProblem(err error, rawURL string) string { return scrub(err.Error(), rawURL) }

// optionPassword reads the password an option names; from says which
// ("" when none did).
func optionPassword(o options) (pw, from string, err error) {
	switch {
	case o.passwordFile != "" && o.passwordEnv != "":
		return "", "", fmt.Errorf("both a password file (%s) and a password variable (%s) are given: keep one", o.passwordFile, o.passwordEnv)
	case o.passwordFile != "":
		pw, err := readPasswordFile(o.passwordFile)
		return pw, "the password file " + o.passwordFile, err
	case o.passwordEnv != "":
		pw, ok := os.LookupEnv(o.passwordEnv)
		if !ok || pw == "" {
			return "", "", fmt.Errorf("the password variable %s is not set", o.passwordEnv)
		}
		return pw, "the variable " + o.passwordEnv, nil
	}
	return "", "", nil
}

func readPasswordFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("password file %s has mode %04o, readable by others: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("password file %s is empty", path)
	}
	return pw, nil
}

// connectError turns a failure to reach or log in to the server into one
// of Open's errors, naming the server by its redacted URL and never
// carrying the password.
func connectError(ctx context.Context, err error, rawURL, password string) error {
	where := Describe(rawURL)
	if ctx.Err() != nil {
		return fmt.Errorf("connect to %s: %w", where, ctx.Err())
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			return fmt.Errorf("%w: %s: %s: check the user and the password (from the URL, the password file or variable, or PGPASSWORD)",
				ErrAuth, where, scrub(pgErr.Message, rawURL, password))
		case "3D000": // invalid_catalog_name
			return fmt.Errorf("connect to %s: %s: create it first (createdb, or CREATE DATABASE)", where, scrub(pgErr.Message, rawURL, password))
		}
		return fmt.Errorf("connect to %s: %s (SQLSTATE %s)", where, scrub(pgErr.Message, rawURL, password), pgErr.Code)
	}
	msg := strings.ReplaceAll(scrub(err.Error(), rawURL, password), "\n\t", " ")
	return fmt.Errorf("%w: %s: %s: is the server running, and are the host and port (or socket directory) right?",
		ErrUnreachable, where, msg)
}

// scrub removes every password from a message: the URL's and any other
// given, so that no message carries one whatever a library put in it.
func scrub(msg, rawURL string, passwords ...string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if pw, ok := u.User.Password(); ok {
			passwords = append(passwords, pw, url.PathEscape(pw), url.QueryEscape(pw))
		}
		if pw := u.Query().Get("password"); pw != "" {
			passwords = append(passwords, pw, url.QueryEscape(pw))
		}
	}
	for _, pw := range passwords {
		if len(pw) > 0 {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// Describe names the database of rawURL for messages and logs as
// user@host/database (user@host:port/database with a port, the socket
// directory as the host for a unix socket): never a password, nor any
// other parameter of the URL.
func Describe(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return "(not a URL)"
	}
	host := u.Host
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if i := strings.IndexByte(host, ','); i >= 0 {
		host = host[:i]
	}
	who := ""
	if u.User != nil && u.User.Username() != "" {
		who = u.User.Username() + "@"
	}
	return who + host + "/" + strings.TrimPrefix(u.Path, "/")
}
