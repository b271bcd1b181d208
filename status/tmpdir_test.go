package status_test

import (
	"os"
	"testing"

	"github.com/runner-manager/runner-manager/internal/tmptest"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// TestMain runs the tests in a temporary directory of their own, stops the
// PostgreSQL server a test started, and fails them if they leave anything
// else.
func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(pgtest.Run(m)))
}
