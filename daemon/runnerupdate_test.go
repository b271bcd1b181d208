package daemon_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// With AutoUpdateRunner the daemon installs the newest runner release.
func TestRunAutoUpdatesRunner(t *testing.T) {
	w := newWorld(t)
	w.gh.SetLatestRunnerRelease("9.8.7")
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), AutoUpdateRunner: true, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	stop := start(t, d)
	listener := filepath.Join(w.dataDir, "runners", "9.8.7", "bin", fakegithub.ListenerName())
	require.Eventually(t, func() bool { _, err := os.Stat(listener); return err == nil }, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, stop())
}
