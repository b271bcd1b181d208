// Package pgtest owns the real PostgreSQL server that tests of the
// PostgreSQL store (and of anything run over it) talk to: it finds the
// server's binaries, runs initdb and the server in a private temporary
// directory, listening on a unix socket there only, and hands each test a
// database of its own. One server serves a whole test process; a test that
// must stop or restart a server starts its own with New.
//
// A package using it calls Main from its TestMain, which stops the shared
// server and removes its directory when the tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// When the binaries are not installed the tests are skipped, with a message
// saying so, unless RUNNER_MANAGER_REQUIRE_POSTGRES=1 (as CI sets it): then
// they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RequireEnv is the environment variable that turns a skip for want of
// PostgreSQL's binaries into a failure when it is "1".
const RequireEnv = "RUNNER_MANAGER_REQUIRE_POSTGRES"

// User is the server's superuser, the role every test database belongs to.
const User = "pgtest"

var (
	mainCalled atomic.Bool
	shared     struct {
		once sync.Once
		srv  *Server
		err  error
	}
)

// Main runs the package's tests, then stops the shared server (if a test
// started it) and removes its directory. Call it from TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it runs m's tests, stops the shared server
// and returns the exit code, for a TestMain that has more to do after.
func Run(m *testing.M) int {
	mainCalled.Store(true)
	code := m.Run()
	if srv := shared.srv; srv != nil {
		if err := srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the shared PostgreSQL server: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		if err := srv.remove(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		}
	}
	return code
}

// Start returns the URL of a new, empty database on the process's shared
// server (started by the first call), dropped when tb ends. The URL holds
// the superuser's password.
func Start(tb testing.TB) string {
	tb.Helper()
	return Shared(tb).URL(Shared(tb).CreateDatabase(tb))
}

// Shared returns the process's shared server, starting it on first use. It
// skips tb (or fails it, under RequireEnv) when PostgreSQL is not installed.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("pgtest: call pgtest.Main(m) from this package's TestMain, so that the shared server is stopped when the tests end")
	}
	bin := binDir(tb)
	shared.once.Do(func() { shared.srv, shared.err = newServer(bin) })
	if shared.err != nil {
		tb.Fatalf("pgtest: %v", shared.err)
	}
	return shared.srv
}

// New starts a server of tb's own, stopped and removed when tb ends: for a
// test that stops or restarts it.
func New(tb testing.TB) *Server {
	tb.Helper()
	srv, err := newServer(binDir(tb))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			tb.Errorf("pgtest: stop the server: %v", err)
		}
		if err := srv.remove(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return srv
}

// binDir finds the directory of initdb and postgres, or skips tb.
func binDir(tb testing.TB) string {
	tb.Helper()
	dir, err := findBinaries()
	if err == nil {
		return dir
	}
	msg := fmt.Sprintf("pgtest: %v: install PostgreSQL's server (Debian: apt-get install postgresql) to run the PostgreSQL tests", err)
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("%s (%s=1: they must run here)", msg, RequireEnv)
	}
	tb.Skip(msg)
	return ""
}

// findBinaries returns the directory holding initdb and postgres: from PATH,
// else the newest of Debian's /usr/lib/postgresql/<version>/bin.
func findBinaries() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(initdb); executable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(libRoot, "*", "bin"))
	best, bestVersion := "", -1
	for _, d := range dirs {
		var v int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(d)), "%d", &v); err != nil {
			continue
		}
		if v > bestVersion && executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "postgres")) {
			best, bestVersion = d, v
		}
	}
	if best == "" {
		return "", errors.New("PostgreSQL's initdb and postgres are not installed (looked in PATH and /usr/lib/postgresql/*/bin)")
	}
	return best, nil
}

// libRoot is where Debian installs PostgreSQL's versions.
var libRoot = "/usr/lib/postgresql"

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Server is one PostgreSQL server in a temporary directory of its own,
// listening on a unix socket in that directory (no TCP port).
type Server struct {
	bin      string
	dir      string
	password string
	owner    *account // who runs the server: nil for the current user

	mu    sync.Mutex
	proc  *process
	admin *pgxpool.Pool
}

// SocketDir is the directory of the server's unix socket.
func (s *Server) SocketDir() string { return s.dir }

// Password is the superuser's password.
func (s *Server) Password() string { return s.password }

// URL is the URL of database db on this server, as the superuser, with
// the password.
func (s *Server) URL(db string) string { return s.URLWith(User, s.password, db) }

// URLWith is the URL of database db as user, with password ("" for none).
func (s *Server) URLWith(user, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Path: "/" + db, RawQuery: "host=" + s.dir}
	if password != "" {
		u.User = url.UserPassword(user, password)
	}
	return u.String()
}

// CreateDatabase creates a new, empty database, dropped when tb ends, and
// returns its name.
func (s *Server) CreateDatabase(tb testing.TB) string {
	tb.Helper()
	name := "t_" + randomHex(8)
	if err := s.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		// FORCE ends the sessions a failed test left open.
		if err := s.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return name
}

// errStopped is what the admin connection's users get from a stopped server.
var errStopped = errors.New("the server is stopped")

// Exec runs sql as the superuser in the database "postgres".
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		return errStopped
	}
	_, err := s.admin.Exec(ctx, sql, args...)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newServer runs initdb in a new temporary directory and starts the server.
func newServer(bin string) (*Server, error) {
	owner, err := serverAccount()
	if err != nil {
		return nil, err
	}
	base := tempBase(owner)
	removeStale(base)
	dir, err := os.MkdirTemp(base, dirPrefix)
	if err != nil {
		return nil, err
	}
	// Who made it: a later run removes the directory once that process is
	// gone (killed before it could).
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, password: randomHex(16), owner: owner}
	if err := s.initdb(); err != nil {
		_ = s.remove()
		return nil, err
	}
	if err := s.Start(); err != nil {
		_ = s.remove()
		return nil, err
	}
	return s, nil
}

const (
	dirPrefix = "rm-pgtest-"
	ownerFile = "owner.pid"
)

// removeStale removes the directories of servers whose test process is
// gone: one killed (a timeout, kill -9) leaves its directory behind, while
// its server, on Linux, quit with it.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or being made
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "data", "postmaster.pid")); err == nil && !serverGone(d) {
			continue // a server still runs there
		}
		_ = os.RemoveAll(d)
	}
}

// serverGone reports whether the server whose directory is d has exited
// (the pid in its postmaster.pid is not alive).
func serverGone(d string) bool {
	b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
	if err != nil {
		return true
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return err != nil || !processAlive(pid)
}

// tempBase is where the server's directory goes: the temporary directory,
// unless its path is too long for a unix socket's (about 100 bytes) or,
// when the server runs as another user, that user cannot reach it.
func tempBase(owner *account) string {
	d := os.TempDir()
	if len(d) >= 60 || (owner != nil && !traversable(d)) {
		return "/tmp"
	}
	return d
}

// traversable reports whether every directory from d up lets others
// through (the x bit for others).
func traversable(d string) bool {
	for {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(d)
		if parent == d {
			return true
		}
		d = parent
	}
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// initdb creates the cluster: a superuser with a password, which every
// connection must give (scram-sha-256), so that tests of a wrong password
// mean something.
func (s *Server) initdb() error {
	pwfile := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return err
	}
	if err := s.owner.own(s.dir, pwfile); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "initdb"), "-D", s.dataDir(), "-U", User,
		"--pwfile", pwfile, "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync", "--no-instructions")
	cmd.Dir = s.dir
	cmd.SysProcAttr = s.owner.sysProcAttr(false)
	out, err := cmd.CombinedOutput()
	_ = os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("initdb in %s%s: %w\n%s", s.dir, s.owner.as(), err, out)
	}
	return nil
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("the server is running")
	}
	logf, err := os.OpenFile(s.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// A test server: durability is not wanted, speed is.
	args := []string{"-D", s.dataDir(), "-k", s.dir, "-c", "listen_addresses=", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"}
	p, err := startProcess(filepath.Join(s.bin, "postgres"), args, s.dir, logf, s.owner)
	if err != nil {
		return fmt.Errorf("start postgres%s: %w", s.owner.as(), err)
	}
	s.proc = p
	admin, err := s.waitReady(p)
	if err != nil {
		_ = p.stop()
		s.proc = nil
		return err
	}
	s.admin = admin
	return nil
}

// waitReady connects to the new server until it answers, or fails when the
// server exits or a minute passes.
func (s *Server) waitReady(p *process) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(s.URL("postgres"))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = pool.Ping(ctx)
			if err != nil {
				pool.Close()
			}
		}
		cancel()
		if err == nil {
			return pool, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("postgres exited at start (%v): %s", p.err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("postgres does not answer after a minute (%v): %s", err, s.logTail())
		}
	}
}

// Stop shuts the server down (fast: sessions are ended) and waits for it.
// Stopping a stopped server is harmless.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.proc == nil {
		return nil
	}
	err := s.proc.stop()
	s.proc = nil
	if err != nil {
		return fmt.Errorf("%w: %s", err, s.logTail())
	}
	return nil
}

// remove deletes the server's directory.
func (s *Server) remove() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove the server's directory: %w", err)
	}
	return nil
}

// logTail is the end of the server's log, for an error message.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "server log " + s.logPath() + ":\n" + strings.Join(lines, "\n")
}
