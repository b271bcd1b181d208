package platform_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

func TestHostCPU(t *testing.T) {
	root := t.TempDir()
	stat := func(user, system, idle, iowait uint64) {
		t.Helper()
		body := "cpu  " + u(user) + " 0 " + u(system) + " " + u(idle) + " " + u(iowait) + " 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"
		require.NoError(t, os.WriteFile(filepath.Join(root, "stat"), []byte(body), 0o600))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := platform.NewHostCPUAt(root, func() time.Time { return now })

	stat(100, 100, 800, 0)
	_, ok := h.Percent()
	assert.False(t, ok, "the first look knows nothing")

	now = now.Add(time.Second)
	stat(200, 150, 1000, 50) // busy +150 of +400
	got, ok := h.Percent()
	require.True(t, ok)
	assert.InDelta(t, 37.5, got, 1e-9)

	now = now.Add(100 * time.Millisecond)
	stat(1000, 150, 1000, 50)
	got, ok = h.Percent()
	require.True(t, ok)
	assert.InDelta(t, 37.5, got, 1e-9, "a look too soon gets the last figure")

	now = now.Add(time.Second)
	stat(1000, 150, 1400, 50) // idle only
	got, ok = h.Percent()
	require.True(t, ok)
	assert.InDelta(t, 800.0/1200*100, got, 1e-9, "measured since the previous look taken")

	now = now.Add(time.Second)
	require.NoError(t, os.Remove(filepath.Join(root, "stat")))
	_, ok = h.Percent()
	assert.False(t, ok, "no /proc/stat: unknown")

	t.Run("ThisHost", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("/proc/stat is Linux's")
		}
		h := platform.NewHostCPU()
		_, ok := h.Percent()
		assert.False(t, ok)
		require.Eventually(t, func() bool {
			v, ok := h.Percent()
			return ok && v >= 0 && v <= 100
		}, 10*time.Second, 100*time.Millisecond)
	})
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
