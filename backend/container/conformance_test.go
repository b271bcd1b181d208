//go:build linux

package container_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
	"github.com/runner-manager/runner-manager/backend/launchertest"
)

// The container backend, as a daemon registers it, passes the launcher
// suite on the tests' engine (skipped without one, failed under
// RUNNER_MANAGER_REQUIRE_PODMAN=1).
func TestConformance(t *testing.T) {
	_, engine := containertest.Engine(t)
	launchertest.Run(t, launchertest.Harness{
		New: func(t *testing.T, dataDir string) rm.Launcher {
			b := container.NewBackend(container.BackendConfig{Engine: engine, Host: hostOf(t, dataDir),
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
		Prepare: func(t *testing.T) rm.LaunchSpec {
			// Host networking: the fake GitHub listens on loopback.
			return rm.LaunchSpec{Policy: rm.Policy{Name: "conformance", Backend: rm.BackendContainer,
				Container: rm.ContainerSettings{Image: containertest.RunnerImage(t), Network: "host"}}}
		},
		Remains: func(t *testing.T, _ rm.Launcher, a rm.AttemptID) []string {
			if _, err := inspect(t, container.ContainerName(a)); !cerrdefs.IsNotFound(err) {
				return []string{"container " + container.ContainerName(a)}
			}
			return nil
		},
	})
}

// hostOf is the host a data directory stands for: the containers'
// labels name it, and a launcher after a restart finds them by it.
func hostOf(t *testing.T, dataDir string) rm.HostID {
	t.Helper()
	file := filepath.Join(dataDir, "host-id")
	if b, err := os.ReadFile(file); err == nil {
		id, err := rm.ParseHostID(string(b))
		require.NoError(t, err)
		return id
	}
	id := rm.NewHostID()
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	require.NoError(t, os.WriteFile(file, []byte(id.String()), 0o600))
	return id
}
