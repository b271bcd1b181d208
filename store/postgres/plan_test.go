package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// plan is PostgreSQL's plan of q, with sequential scans disabled: a query
// that still scans its table has no index to serve it.
func plan(t *testing.T, conn *pgx.Conn, q string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(t.Context(), "EXPLAIN "+q, args...)
	require.NoError(t, err)
	var lines []string
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		lines = append(lines, l)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

// TestPlans: the queries of a pass read indexes, never the whole history.
func TestPlans(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	conn, err := pgx.Connect(t.Context(), u)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), "SET enable_seqscan = off")
	require.NoError(t, err)

	policy := rm.NewPolicyID().String()
	got := plan(t, conn, postgres.ActiveAttemptsQuery, policy)
	assert.Contains(t, got, "attempts_live", "the live attempts come from the partial index:\n%s", got)

	q, args := postgres.AttemptsQuery(store.AttemptFilter{Limit: 50})
	got = plan(t, conn, q, args...)
	assert.Contains(t, got, "Index Scan Backward using attempts_created", "the newest attempts are read backwards from the time index:\n%s", got)
	assert.NotContains(t, got, "Sort", got)

	q, args = postgres.AttemptsQuery(store.AttemptFilter{Policy: rm.NewPolicyID(), Limit: 50})
	got = plan(t, conn, q, args...)
	assert.Contains(t, got, "attempts_policy_created", got)
	assert.NotContains(t, got, "Seq Scan", got)
}
