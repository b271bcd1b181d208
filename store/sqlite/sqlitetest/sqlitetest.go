// Package sqlitetest opens SQLite journals for tests.
package sqlitetest

import (
	"testing"

	"github.com/runner-manager/runner-manager/store/sqlite"
)

// MustOpen opens a SQLite journal in a temporary directory of tb, closed
// when the test ends.
func MustOpen(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(tb.TempDir() + "/journal.db")
	if err != nil {
		tb.Fatalf("open journal: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close journal: %v", err)
		}
	})
	return s
}
