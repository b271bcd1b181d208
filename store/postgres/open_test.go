package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func open(t *testing.T, url string, opts ...postgres.Option) (*postgres.Store, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, url, opts...)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// sql runs a statement in the database of url, as the superuser.
func sql(t *testing.T, url, stmt string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), stmt, args...)
	require.NoError(t, err)
}

func count(t *testing.T, url, query string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), query).Scan(&n))
	return n
}

// withoutPassword is url without its password.
func withoutPassword(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.User(u.User.Username())
	return u.String()
}

func TestOpenErrors(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.CreateDatabase(t)
	pw := srv.Password()

	t.Run("BadURL", func(t *testing.T) {
		for _, u := range []string{
			"mysql://u:" + pw + "@localhost/db",
			"postgres://u:" + pw + "@localhost:notaport/db",
			"postgres://u:" + pw + "@/db?pool_max_conns=lots",
			"host=localhost password=" + pw,
			"",
		} {
			_, err := open(t, u)
			require.ErrorIs(t, err, postgres.ErrBadURL, u)
			assert.NotContains(t, err.Error(), pw, "the password is never in an error")
		}
	})
	t.Run("ServerDown", func(t *testing.T) {
		down := pgtest.New(t)
		u := down.URL("postgres")
		require.NoError(t, down.Stop())
		_, err := open(t, u)
		require.ErrorIs(t, err, postgres.ErrUnreachable)
		assert.NotContains(t, err.Error(), down.Password())
		assert.Contains(t, err.Error(), "is the server running")
		assert.Contains(t, err.Error(), postgres.Describe(u), "the database is named, without the password")

		_, err = open(t, "postgres://u:"+pw+"@127.0.0.1:1/db")
		require.ErrorIs(t, err, postgres.ErrUnreachable, "nothing listens on a TCP port")
		assert.NotContains(t, err.Error(), pw)
	})
	t.Run("WrongPassword", func(t *testing.T) {
		_, err := open(t, srv.URLWith(pgtest.User, "not-the-password", db))
		require.ErrorIs(t, err, postgres.ErrAuth)
		assert.NotContains(t, err.Error(), "not-the-password")
		assert.Contains(t, err.Error(), "password authentication failed")

		_, err = open(t, srv.URLWith("nobody-here", pw, db))
		require.ErrorIs(t, err, postgres.ErrAuth, "an unknown user")
		assert.NotContains(t, err.Error(), pw)
	})
	t.Run("NoDatabase", func(t *testing.T) {
		_, err := open(t, srv.URL("no_such_db"))
		require.ErrorContains(t, err, `database "no_such_db" does not exist`)
		assert.NotErrorIs(t, err, postgres.ErrUnreachable)
		assert.NotErrorIs(t, err, postgres.ErrAuth)
	})
	t.Run("SchemaTooNew", func(t *testing.T) {
		u := pgtest.Start(t)
		s, err := open(t, u)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		newer := postgres.SchemaVersion() + 1
		sql(t, u, `INSERT INTO runner_manager_schema (version, name) VALUES ($1, 'from a newer program')`, newer)
		sql(t, u, `CREATE TABLE only_the_newer_program_knows (x int)`)
		tables := count(t, u, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`)

		_, err = open(t, u)
		require.ErrorIs(t, err, postgres.ErrSchemaTooNew)
		assert.Contains(t, err.Error(), fmt.Sprintf("schema version %d", newer))
		assert.Contains(t, err.Error(), "upgrade runner-manager")
		assert.NotContains(t, err.Error(), pw)
		assert.Equal(t, tables, count(t, u, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`), "nothing was written")
		assert.Equal(t, newer, count(t, u, `SELECT max(version) FROM runner_manager_schema`))
	})
}

func TestOpenPassword(t *testing.T) {
	srv := pgtest.Shared(t)
	full := srv.URL(srv.CreateDatabase(t))
	bare := withoutPassword(t, full)
	writeFile := func(t *testing.T, content string, mode os.FileMode) string {
		path := filepath.Join(t.TempDir(), "password")
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
		require.NoError(t, os.Chmod(path, mode))
		return path
	}

	t.Run("FromURL", func(t *testing.T) {
		_, err := open(t, full)
		require.NoError(t, err)
	})
	t.Run("FromFile", func(t *testing.T) {
		_, err := open(t, bare, postgres.WithPasswordFile(writeFile(t, srv.Password()+"\n", 0o600)))
		require.NoError(t, err)
	})
	t.Run("FileReadableByOthers", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Unix file modes")
		}
		_, err := open(t, bare, postgres.WithPasswordFile(writeFile(t, srv.Password(), 0o644)))
		require.ErrorIs(t, err, postgres.ErrBadURL)
		assert.Contains(t, err.Error(), "chmod 600")
		assert.NotContains(t, err.Error(), srv.Password())
	})
	t.Run("FileMissing", func(t *testing.T) {
		_, err := open(t, bare, postgres.WithPasswordFile(filepath.Join(t.TempDir(), "none")))
		require.ErrorIs(t, err, postgres.ErrBadURL)
	})
	t.Run("FromNamedEnv", func(t *testing.T) {
		t.Setenv("RM_TEST_PG_PASSWORD", srv.Password())
		_, err := open(t, bare, postgres.WithPasswordEnv("RM_TEST_PG_PASSWORD"))
		require.NoError(t, err)
	})
	t.Run("NamedEnvUnset", func(t *testing.T) {
		_, err := open(t, bare, postgres.WithPasswordEnv("RM_TEST_PG_PASSWORD_UNSET"))
		require.ErrorIs(t, err, postgres.ErrBadURL)
		assert.Contains(t, err.Error(), "RM_TEST_PG_PASSWORD_UNSET is not set")
	})
	t.Run("FromPGPASSWORD", func(t *testing.T) {
		t.Setenv("PGPASSWORD", srv.Password())
		_, err := open(t, bare)
		require.NoError(t, err)
	})
	t.Run("Twice", func(t *testing.T) {
		t.Setenv("RM_TEST_PG_PASSWORD", srv.Password())
		_, err := open(t, full, postgres.WithPasswordEnv("RM_TEST_PG_PASSWORD"))
		require.ErrorIs(t, err, postgres.ErrBadURL)
		assert.Contains(t, err.Error(), "keep one")
		assert.NotContains(t, err.Error(), srv.Password())
	})
	t.Run("WrongFromFile", func(t *testing.T) {
		_, err := open(t, bare, postgres.WithPasswordFile(writeFile(t, "wrong-one", 0o600)))
		require.ErrorIs(t, err, postgres.ErrAuth)
		assert.NotContains(t, err.Error(), "wrong-one")
	})
}

func TestRedact(t *testing.T) {
	tests := map[string]string{
		"postgres://u:secret@db.example:5432/rm":         "postgres://u:xxxxx@db.example:5432/rm",
		"postgres://u@/rm?host=/run/pg":                  "postgres://u@/rm?host=/run/pg",
		"postgresql://db/rm?password=secret&sslmode=off": "postgresql://db/rm?password=xxxxx&sslmode=off",
	}
	for in, want := range tests {
		assert.Equal(t, want, postgres.Redact(in))
	}
	s := pgtest.MustOpen(t)
	assert.NotContains(t, s.URL(), pgtest.Shared(t).Password())
	assert.NotContains(t, s.Where(), pgtest.Shared(t).Password())
}

func TestDescribe(t *testing.T) {
	tests := map[string]string{
		"postgres://u:secret@db.example:5432/rm?sslmode=require": "u@db.example:5432/rm",
		"postgres://u@/rm?host=/run/pg&password=secret":          "u@/run/pg/rm",
		"postgresql://db1,db2/rm":                                "db1/rm",
		"host=db password=secret":                                "(not a URL)",
	}
	for in, want := range tests {
		assert.Equal(t, want, postgres.Describe(in), in)
	}
}

// TestOpenConcurrently: hosts starting at once over one new database apply
// the schema once, under the advisory lock, and all open.
func TestOpenConcurrently(t *testing.T) {
	u := pgtest.Start(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = open(t, u) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, postgres.SchemaVersion(), count(t, u, `SELECT count(*) FROM runner_manager_schema`), "each step applied once")
	assert.Equal(t, postgres.SchemaVersion(), count(t, u, `SELECT max(version) FROM runner_manager_schema`))
}

func TestReopenKeepsEverything(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	h := storetest.NewHost().Build()
	require.NoError(t, s.PutHost(t.Context(), h))
	p := storetest.NewPolicy().Host(h.ID).Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	a := storetest.NewAttempt().Policy(p.ID).Build()
	require.NoError(t, s.RecordAttempt(t.Context(), a))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")

	s, err = open(t, u)
	require.NoError(t, err)
	got, err := s.Attempt(t.Context(), a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.ID, got.ID)
	_, err = s.Policy(t.Context(), p.ID)
	require.NoError(t, err)
}

// TestMigrateFromVersion1: a database of the first schema (before the
// fleet's tables) is brought up to date with its data kept.
func TestMigrateFromVersion1(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// Undo steps 2 and 3, as if a program of schema 1 had made the database.
	sql(t, u, `DELETE FROM runner_manager_schema WHERE version > 1`)
	sql(t, u, `DROP INDEX policies_name_in_force`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN removed_at, ADD CONSTRAINT policies_name_key UNIQUE (name)`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN spare, DROP COLUMN container_image, DROP COLUMN container_cpus, `+
		`DROP COLUMN container_network, DROP COLUMN container_env, DROP COLUMN container_volumes, DROP COLUMN vm_image`)
	sql(t, u, `ALTER TABLE hosts DROP COLUMN version, DROP COLUMN registered_at`)
	sql(t, u, `DROP TABLE job_weights`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN memory_limit`)
	sql(t, u, `ALTER TABLE attempts DROP COLUMN usage_source, DROP COLUMN job_key`)
	sql(t, u, `INSERT INTO hosts (id, name) VALUES ('`+storetest.NewHost().Build().ID.String()+`', 'old-host')`)

	s, err = open(t, u)
	require.NoError(t, err)
	assert.Equal(t, postgres.SchemaVersion(), count(t, u, `SELECT max(version) FROM runner_manager_schema`))
	hs, err := s.FleetHosts(t.Context())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, "old-host", hs[0].Name)
	assert.Equal(t, "", hs[0].Version)
}

// TestMigrateJobKey: a journal of schema 5 held a job's REST number (or a
// scale-set jobId that read as a number) in job_id alone: step 6 names the
// job by that number in decimal; a row with no job stays without one.
func TestMigrateJobKey(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	h := storetest.NewHost().Build()
	require.NoError(t, s.PutHost(t.Context(), h))
	p := storetest.NewPolicy().Host(h.ID).Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	ran := storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).
		Job(rm.Job{ID: "9007199254740993", Number: 1<<53 + 1, RunID: 5, Name: "build"}).Build()
	idle := storetest.NewAttempt().Policy(p.ID).State(rm.StateIdle).Build()
	require.NoError(t, s.RecordAttempt(t.Context(), ran))
	require.NoError(t, s.RecordAttempt(t.Context(), idle))
	require.NoError(t, s.Close())
	sql(t, u, `DELETE FROM runner_manager_schema WHERE version > 5`)
	sql(t, u, `ALTER TABLE attempts DROP COLUMN job_key`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN vm_image`)

	s, err = open(t, u)
	require.NoError(t, err)
	assert.Equal(t, postgres.SchemaVersion(), count(t, u, `SELECT max(version) FROM runner_manager_schema`))
	got, err := s.Attempt(t.Context(), ran.ID)
	require.NoError(t, err)
	assert.Equal(t, ran.Job, got.Job, "the number names the job")
	got, err = s.Attempt(t.Context(), idle.ID)
	require.NoError(t, err)
	assert.False(t, got.Job.Known(), "no job: none named")
}
