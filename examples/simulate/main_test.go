package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example is built and run as a user would, with tiny figures.
func TestExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "simulate")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cmd := exec.CommandContext(t.Context(), bin, "-jobs", "4", "-policies", "2", "-max", "2", "-max-duration", "300ms")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)
	assert.Contains(t, s, "served 4/4 jobs on 4 ephemeral runners")
	assert.Contains(t, s, "completed_job:4")
	assert.True(t, strings.Contains(s, "4/4 done"), s)
}
