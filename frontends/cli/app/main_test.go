package app_test

import (
	"os"
	"testing"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/internal/tmptest"
)

// TestMain lets this test binary be the demo's fake runner, as the real
// program is: the demo hard-links the running executable as
// bin/Runner.Listener.
func TestMain(m *testing.M) {
	if code, ok := app.RunFakeRunnerIfNamed(os.Args); ok {
		os.Exit(code)
	}
	if os.Getenv(runAsProgram) == "1" { // the program, for a test that runs it as another user
		os.Exit(app.Main())
	}
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run()))
}
