package attempts_test

import (
	"os"
	"testing"

	"github.com/runner-manager/runner-manager/internal/tmptest"
)

// TestMain runs the tests in a temporary directory of their own and fails
// them if they leave anything in it.
func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run()))
}
