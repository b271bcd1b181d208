package platform_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

const mib = 1 << 20

func TestHostMemory(t *testing.T) {
	total, available, err := platform.HostMemory()
	require.NoError(t, err)
	assert.Greater(t, total, uint64(64*mib))
	assert.Positive(t, available)
	assert.LessOrEqual(t, available, total)
}

func TestDiskFree(t *testing.T) {
	free, err := platform.DiskFree(t.TempDir())
	require.NoError(t, err)
	assert.Positive(t, free)

	missing := filepath.Join(t.TempDir(), "missing")
	_, err = platform.DiskFree(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing, "the error names the path")
}

func TestHostInfo(t *testing.T) {
	h, err := platform.HostInfo()
	require.NoError(t, err)
	name, err := os.Hostname()
	require.NoError(t, err)
	total, _, err := platform.HostMemory()
	require.NoError(t, err)

	assert.Equal(t, name, h.Name)
	assert.Equal(t, total, h.MemoryBytes)
	assert.Equal(t, runtime.NumCPU(), h.CPUs)
	assert.Equal(t, runtime.GOOS, h.OS)
	assert.Equal(t, runtime.GOARCH, h.Arch)
	assert.True(t, h.ID.IsZero(), "the caller names the host")
}
