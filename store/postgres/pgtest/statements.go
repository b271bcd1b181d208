package pgtest

import (
	"context"
	"fmt"
)

// LoadStatementStats loads pg_stat_statements into the server, restarting
// it, so that the server itself counts the statements each database runs
// (StatementCalls, TopStatements): for benchmarks of a workload's load on
// PostgreSQL. Call it on a server of the test's own (New) before the
// workload connects.
func (s *Server) LoadStatementStats(ctx context.Context) error {
	if err := s.Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
		return err
	}
	if err := s.Stop(); err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	return s.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
}

// ResetStatementStats forgets the statements counted so far, in every
// database.
func (s *Server) ResetStatementStats(ctx context.Context) error {
	return s.Exec(ctx, "SELECT pg_stat_statements_reset()")
}

// StatementCalls is how many statements database db ran since the last
// reset.
func (s *Server) StatementCalls(ctx context.Context, db string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		return 0, errStopped
	}
	var calls int64
	err := s.admin.QueryRow(ctx,
		"SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1", db).Scan(&calls)
	return calls, err
}

// TopStatements is database db's n most run statements since the last
// reset, a line each: the count, then the statement's head and tail.
func (s *Server) TopStatements(ctx context.Context, db string, n int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		return nil, errStopped
	}
	rows, err := s.admin.Query(ctx,
		"SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) || ' … ' || right(regexp_replace(query, '\\s+', ' ', 'g'), 60) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY calls DESC LIMIT $2", db, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var calls int64
		var q string
		if err := rows.Scan(&calls, &q); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%7d  %s", calls, q))
	}
	return out, rows.Err()
}
