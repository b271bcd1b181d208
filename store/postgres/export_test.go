package postgres

import (
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
