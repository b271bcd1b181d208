package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example is built and run as a user would.
func TestExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "embed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(t.Context(), bin, "-jobs", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	assert.Equal(t, 3, strings.Count(s, "completed_job"), s)
	assert.Contains(t, s, "3 jobs, 3 attempts")
}
