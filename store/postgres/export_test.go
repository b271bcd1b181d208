package postgres

import "github.com/runner-manager/runner-manager/store"

// Internals for the black-box tests: the queries whose plans they check.

const ActiveAttemptsQuery = activeAttemptsQuery

func AttemptsQuery(f store.AttemptFilter) (string, []any) { return attemptsQuery(f) }

const LiveAttemptsQuery = liveAttemptsQuery
