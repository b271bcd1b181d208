package runnerpkg_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/runnerpkg"
)

func TestListenerPath(t *testing.T) {
	assert.Equal(t, filepath.Join("/opt/runner", "bin"), filepath.Dir(runnerpkg.ListenerPath("/opt/runner")))
	assert.True(t, strings.HasPrefix(filepath.Base(runnerpkg.ListenerPath("/opt/runner")), "Runner.Listener"))
}
