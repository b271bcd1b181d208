package app_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// bare is a pgtest URL without its password.
func bare(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.User(u.User.Username())
	return u.String()
}

func pgExec(t *testing.T, u, stmt string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), stmt, args...)
	require.NoError(t, err)
}

// Every command reads and writes a PostgreSQL store named by --store,
// $RUNNER_MANAGER_STORE or [store] url, its password from the
// environment or a 0600 file; nothing goes to the data directory's
// journal, and the password is never printed.
func TestStorePostgres(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	e := newEnv(t)
	t.Setenv("RUNNER_MANAGER_STORE_PASSWORD", srv.Password())
	rd := e.runnerDir()

	out := e.ok("--store", bare(t, u), "policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "2", "--runner-dir", rd)
	assert.Contains(t, out, "home")
	t.Setenv("RUNNER_MANAGER_STORE", bare(t, u))
	assert.Contains(t, e.ok("policy", "list"), "home")
	assert.Contains(t, e.ok("status"), "home")
	e.ok("attempts")
	e.ok("policy", "pause", "home")
	_, err := os.Stat(filepath.Join(e.dataDir, "journal.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no SQLite journal is made")

	// The file's [store], with a password file.
	os.Unsetenv("RUNNER_MANAGER_STORE")
	os.Unsetenv("RUNNER_MANAGER_STORE_PASSWORD")
	pwFile := filepath.Join(e.home, "store-password")
	require.NoError(t, os.WriteFile(pwFile, []byte(srv.Password()+"\n"), 0o600))
	cfg := filepath.Join(e.home, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[store]\nurl = \""+bare(t, u)+"\"\npassword_file = \""+pwFile+"\"\n"), 0o600))
	assert.Contains(t, e.ok("--config", cfg, "policy", "list"), "paused")

	st, err := postgres.Open(t.Context(), u)
	require.NoError(t, err)
	defer st.Close()
	ps, err := st.Policies(t.Context())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.True(t, ps[0].Paused, "the edits are in PostgreSQL")
}

// Each way a store cannot be opened is one clear line, exit 1, that names
// the database without its password; nothing is written, not even the
// data directory.
func TestStoreErrors(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	newer := srv.URL(srv.CreateDatabase(t))
	st, err := postgres.Open(t.Context(), newer)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	pgExec(t, newer, `INSERT INTO runner_manager_schema (version, name) VALUES ($1, 'from a newer program')`, postgres.SchemaVersion()+1)
	down := pgtest.New(t)
	downURL := down.URL("postgres")
	require.NoError(t, down.Stop())

	e := newEnv(t).noDataDir()
	loose := filepath.Join(e.home, "loose-password")
	require.NoError(t, os.WriteFile(loose, []byte(srv.Password()), 0o644))
	for _, tt := range []struct {
		name     string
		store    string
		password string
		env      map[string]string
		code     int
		want     string
	}{
		{name: "BadURL", store: "mysql://rm@db.example/rm", code: app.ExitInvalid, want: "bad PostgreSQL URL: want postgres://"},
		{name: "BadPort", store: "postgres://rm@db.example:notaport/rm", code: app.ExitInvalid, want: "bad PostgreSQL URL"},
		{name: "ServerDown", store: bare(t, downURL), password: down.Password(), code: app.ExitLocalState, want: "PostgreSQL server unreachable"},
		{name: "WrongPassword", store: bare(t, u), password: "not-the-password", code: app.ExitLocalState, want: "PostgreSQL refused the login"},
		{name: "SchemaTooNew", store: bare(t, newer), password: srv.Password(), code: app.ExitLocalState, want: "newer than this program's"},
		{name: "PasswordInFlag", store: u, code: app.ExitInvalid, want: "holds a password"},
		{name: "LoosePasswordFile", store: bare(t, u), env: map[string]string{"RUNNER_MANAGER_STORE_PASSWORD_FILE": loose}, code: app.ExitInvalid, want: "chmod 600"},
		{name: "TwoPasswords", store: bare(t, u), password: srv.Password(), env: map[string]string{"RUNNER_MANAGER_STORE_PASSWORD_FILE": loose}, code: app.ExitInvalid, want: "keep one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("RUNNER_MANAGER_STORE_PASSWORD", tt.password)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			for _, args := range [][]string{{"policy", "list"}, {"policy", "add", "x", "--repo", "o/r", "--scale-set", "x"}, {"status"}} {
				stderr := e.fails(tt.code, append([]string{"--store", tt.store}, args...)...)
				assert.Contains(t, stderr, tt.want, args)
				assert.Equal(t, 2, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line and the next step: %q", stderr)
				for _, pw := range []string{srv.Password(), down.Password(), "not-the-password"} {
					assert.NotContains(t, stderr, pw, "no password in a message")
				}
				_, err := os.Stat(e.dataDir)
				assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written")
			}
		})
	}
	// Nothing was written in the newer database either.
	conn, err := pgx.Connect(t.Context(), newer)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM hosts`).Scan(&n))
	assert.Zero(t, n)
}

// policy move hands a policy to another host of the store, by id (or a
// name only one host has); refused with the count while it has live
// runners, and for a host the store does not know.
func TestPolicyMove(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	e, other := newEnv(t), newEnv(t) // two data directories: two hosts (the second's HOME)
	t.Setenv("RUNNER_MANAGER_STORE_PASSWORD", srv.Password())
	t.Setenv("RUNNER_MANAGER_STORE", bare(t, u))
	rd := e.runnerDir()
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", rd)
	other.ok("policy", "add", "away", "--repo", "octo/app", "--scale-set", "away", "--runner-dir", rd) // the other host records itself
	st, err := postgres.Open(t.Context(), u)
	require.NoError(t, err)
	defer st.Close()
	hs, err := st.Hosts(t.Context())
	require.NoError(t, err)
	require.Len(t, hs, 2)
	p, err := st.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	var to rm.Host
	for _, h := range hs {
		if h.ID != p.Host {
			to = h
		}
	}

	assert.Contains(t, e.fails(app.ExitNotFound, "policy", "move", "home", "--host", "nowhere"), `no host "nowhere"`)
	assert.Contains(t, e.fails(app.ExitInvalid, "policy", "move", "home", "--host", to.Name), "give one's id", "both hosts have this machine's name")
	live := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(rm.StateBusy).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), live))
	assert.Contains(t, e.fails(1, "policy", "move", "home", "--host", to.ID.String()), "policy home has 1 live runners")
	ended, err := live.Conclude(rm.Outcome{Kind: rm.CompletedJob}, time.Now())
	require.NoError(t, err)
	require.NoError(t, st.RecordAttempt(t.Context(), ended))

	assert.Contains(t, e.ok("policy", "move", "home", "--host", to.ID.String()), "moved policy home to host")
	got, err := st.Policy(t.Context(), p.ID)
	require.NoError(t, err)
	assert.Equal(t, to.ID, got.Host)
	assert.Contains(t, other.ok("policy", "move", "home", "--host", strings.ToUpper(to.ID.String())), "already served by host")
}
