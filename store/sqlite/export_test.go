package sqlite

import (
	"database/sql"

	"github.com/runner-manager/runner-manager/store"
)

// Internals for the black-box tests: the queries whose plans they check and
// the two connection pools whose settings they check.

const ActiveAttemptsQuery = activeAttemptsQuery

const LiveAttemptsQuery = liveAttemptsQuery

func AttemptsQuery(f store.AttemptFilter) (string, []any) { return attemptsQuery(f) }

func WriterDB(s *Store) *sql.DB { return s.w }

func ReaderDB(s *Store) *sql.DB { return s.r }
