package store

import "database/sql"

// Internals for the black-box tests: the queries whose plans they check and
// the two connection pools whose settings they check.

const ActiveAttemptsQuery = activeAttemptsQuery

const LiveAttemptsQuery = liveAttemptsQuery

func AttemptsQuery(f AttemptFilter) (string, []any) { return attemptsQuery(f) }

func WriterDB(s *SQLite) *sql.DB { return s.w }

func ReaderDB(s *SQLite) *sql.DB { return s.r }
