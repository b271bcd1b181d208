//go:build linux

package native_test

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/native"
)

// TestNativeCopyWarnedOnce: a data directory on another filesystem than the
// installed runner costs a copy per launch; that is said once at WARN per
// installed runner, not at every launch.
func TestNativeCopyWarnedOnce(t *testing.T) {
	var a, b syscall.Stat_t
	installed := fakeRunner(t, t.TempDir())
	if syscall.Stat(installed, &a) != nil || syscall.Stat("/dev/shm", &b) != nil || a.Dev == b.Dev {
		t.Skip("needs /dev/shm on another filesystem than the temporary directory, to force a copy")
	}
	data, err := os.MkdirTemp("/dev/shm", "rm-copy-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(data) })
	var logs bytes.Buffer
	l := native.NewLauncher(data, native.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	t.Cleanup(func() { _ = l.Close() })
	for range 3 {
		_, p := launch(t, l, installed, "exit0")
		waitDone(t, p, 10*time.Second)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "runner files copied"), logs.String())
}
