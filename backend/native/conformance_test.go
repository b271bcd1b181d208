//go:build linux

package native_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
// then held together by process group and environment marker. Its log
// names what it stopped of the processes a job left, and how it found
// them.
func TestConformance(t *testing.T) {
	t.Run("Cgroups", func(t *testing.T) {
		probe := native.NewLauncher(t.TempDir())
		in := probe.CgroupsInUse()
		_ = probe.Close()
		if in == "" {
			t.Skip("no cgroup can be made here (not root, nothing delegated): the fallback alone runs the suite")
		}
		var logs logBuffer
		launchertest.Run(t, nativeHarness(&logs))
		assert.Contains(t, logs.String(), `msg="stopped the processes the attempt left behind"`)
		assert.Contains(t, logs.String(), `commands="sleep ×3" found_by=cgroup`)
	})
	t.Run("Fallback", func(t *testing.T) {
		var logs logBuffer
		launchertest.Run(t, nativeHarness(&logs, native.WithoutCgroups()))
		assert.Contains(t, logs.String(), `commands="sleep ×3" found_by="process group and environment marker"`)
	})
}

// nativeHarness makes launchers with opts, logging to the test and to
// logs.
func nativeHarness(logs *logBuffer, opts ...native.Option) launchertest.Harness {
	return launchertest.Harness{
		New: func(t *testing.T, dataDir string) rm.Launcher {
			log := slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), logs), nil))
			l := native.NewLauncher(dataDir, append(opts, native.WithLeftoverGrace(2*time.Second), native.WithLogger(log))...)
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
