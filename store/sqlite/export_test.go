package sqlite

import (
	"database/sql"

	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

// Internals for the black-box tests: the queries whose plans they check and
// the two connection pools whose settings they check.

var ActiveAttemptsQuery = sqlstore.ActiveAttemptsQuery(dialect)

var LiveAttemptsQuery = sqlstore.LiveAttemptsQuery(dialect)

func AttemptsQuery(f store.AttemptFilter) (string, []any) { return sqlstore.AttemptsQuery(dialect, f) }

func WriterDB(s *Store) *sql.DB { return s.w }

func ReaderDB(s *Store) *sql.DB { return s.r }
