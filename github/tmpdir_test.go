package github_test

import (
	"os"
	"testing"

	"github.com/runner-manager/runner-manager/internal/tmptest"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestMain runs the tests in a temporary directory of their own, removes
// the fake runner they built, and fails them if they leave anything else.
func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run(), fakegithub.RemoveRunnerBuild))
}
