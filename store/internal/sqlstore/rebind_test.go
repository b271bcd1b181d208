package sqlstore_test

import (
	"testing"

	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE b = ? AND c IN (?, ?)", "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"},
		{"UPDATE t SET name = '~?' || id WHERE id = ?", "UPDATE t SET name = '~?' || id WHERE id = $1"},
		{`SELECT "a?b" FROM t WHERE x = ?`, `SELECT "a?b" FROM t WHERE x = $1`},
		{"SELECT 'it''s' WHERE x = ?", "SELECT 'it''s' WHERE x = $1"},
	}
	for _, tt := range tests {
		if got := sqlstore.Rebind(tt.in); got != tt.want {
			t.Errorf("Rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
