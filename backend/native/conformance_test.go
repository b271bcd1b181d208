//go:build linux

package native_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/launchertest"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run(), fakegithub.RemoveRunnerBuild))
}

// The native launcher passes the launcher suite with a cgroup per
// attempt, where this host lets it make them, and without: its attempts
// then held together by process group and environment marker.
func TestConformance(t *testing.T) {
	t.Run("Cgroups", func(t *testing.T) {
		probe := native.NewLauncher(t.TempDir())
		in := probe.CgroupsInUse()
		_ = probe.Close()
		if in == "" {
			t.Skip("no cgroup can be made here (not root, nothing delegated): the fallback alone runs the suite")
		}
		launchertest.Run(t, nativeHarness())
	})
	t.Run("Fallback", func(t *testing.T) {
		launchertest.Run(t, nativeHarness(native.WithoutCgroups()))
	})
}

func nativeHarness(opts ...native.Option) launchertest.Harness {
	return launchertest.Harness{
		New: func(t *testing.T, dataDir string) rm.Launcher {
			l := native.NewLauncher(dataDir, append(opts, native.WithLeftoverGrace(2*time.Second),
				native.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))))...)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		Prepare: func(t *testing.T) rm.LaunchSpec {
			return rm.LaunchSpec{RunnerDir: githubtest.BuildFakeRunner(t)}
		},
		Remains: func(_ *testing.T, l rm.Launcher, a rm.AttemptID) []string {
			if root := l.(*native.Launcher).Root(a); exists(root) {
				return []string{root}
			}
			return nil
		},
		JobsOnHost: true,
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
