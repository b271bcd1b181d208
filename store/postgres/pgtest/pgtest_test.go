package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(t *testing.T, url, sql string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

func TestStartGivesEachTestItsDatabase(t *testing.T) {
	a, b := pgtest.Start(t), pgtest.Start(t)
	assert.NotEqual(t, a, b)
	dbA, err := query(t, a, "SELECT current_database()")
	require.NoError(t, err)
	dbB, err := query(t, b, "SELECT current_database()")
	require.NoError(t, err)
	assert.NotEqual(t, dbA, dbB)

	srv := pgtest.Shared(t)
	assert.Same(t, srv, pgtest.Shared(t), "one server per test process")
	fi, err := os.Stat(srv.SocketDir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the socket's directory is private")
}

func TestPasswordRequired(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.CreateDatabase(t)
	_, err := query(t, srv.URLWith(pgtest.User, "wrong", db), "SELECT 'x'")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "password authentication failed")
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	srv := pgtest.Shared(t)
	var name string
	t.Run("Inner", func(t *testing.T) { name = srv.CreateDatabase(t) })
	n, err := query(t, srv.URL("postgres"), "SELECT count(*)::text FROM pg_database WHERE datname = '"+name+"'")
	require.NoError(t, err)
	assert.Equal(t, "0", n)
}

func TestOwnServerStopsAndStarts(t *testing.T) {
	srv := pgtest.New(t)
	url := srv.URL("postgres")
	_, err := query(t, url, "SELECT 'up'")
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	_, err = query(t, url, "SELECT 'up'")
	require.Error(t, err, "a stopped server answers nothing")
	require.NoError(t, srv.Stop(), "stopping twice is harmless")
	require.NoError(t, srv.Start())
	got, err := query(t, url, "SELECT 'up'")
	require.NoError(t, err)
	assert.Equal(t, "up", got)
}
