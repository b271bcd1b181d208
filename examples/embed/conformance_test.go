package main

import (
	"io"
	"os"
	"testing"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/launchertest"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fakegithub.RemoveRunnerBuild()
	os.Exit(code)
}

// The program's own launcher passes the launcher suite every backend
// passes: a new backend is its package and this one call.
func TestConformance(t *testing.T) {
	launchertest.Run(t, launchertest.Harness{
		New: func(t *testing.T, dataDir string) rm.Launcher {
			n := native.NewLauncher(dataDir)
			t.Cleanup(func() { _ = n.Close() })
			return newLauncher(n, io.Discard)
		},
		Prepare: func(t *testing.T) rm.LaunchSpec {
			return rm.LaunchSpec{RunnerDir: githubtest.BuildFakeRunner(t)}
		},
	})
}
