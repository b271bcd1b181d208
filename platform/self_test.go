package platform_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

func TestIdentify(t *testing.T) {
	s, err := platform.Identify()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), s.PID)
	assert.NotEmpty(t, s.Hostname)
	assert.NotEmpty(t, s.BootID)
	assert.True(t, platform.Alive(s.PID, s.Start), "the start stamp names this process")
}
