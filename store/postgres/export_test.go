package postgres

import (
	"time"

	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

// Internals for the black-box tests: the queries whose plans they check,
// as the server gets them.

var ActiveAttemptsQuery = sqlstore.Rebind(sqlstore.ActiveAttemptsQuery(dialect))

func AttemptsQuery(f store.AttemptFilter) (string, []any) {
	q, args := sqlstore.AttemptsQuery(dialect, f)
	return sqlstore.Rebind(q), args
}

var LiveAttemptsQuery = sqlstore.Rebind(sqlstore.LiveAttemptsQuery(dialect))

// SetListenProbe sets how long the fleet listeners of stores opened next
// wait before they ping, until the test ends.
func SetListenProbe(tb interface{ Cleanup(func()) }, d time.Duration) {
	old := listenProbe
	listenProbe = d
	tb.Cleanup(func() { listenProbe = old })
}
