package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example is built and run as a user would: every job is served by a
// runner of its own, concluded in the journal, with the peak memory its
// meter saw, on a host whose admission has its defaults.
func TestExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "embed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(t.Context(), bin, "-jobs", "3").CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := string(out)

	lines := regexp.MustCompile(`(?m)^(rm-\S+)\s+finished\s+completed_job\s+job "(build-\d)"\s+peak (\d+) MiB$`).FindAllStringSubmatch(s, -1)
	require.Len(t, lines, 3, s)
	runners, jobs := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		runners[l[1]], jobs[l[2]] = true, true
		peak, err := strconv.Atoi(l[3])
		require.NoError(t, err)
		assert.GreaterOrEqual(t, peak, 32, "the meters saw the job's 32 MiB: %s", l[0])
	}
	assert.Len(t, runners, 3, "one ephemeral runner per job")
	assert.Len(t, jobs, 3, "each job ran once")
	assert.Regexp(t, `admission: host memory [1-9]\d* MiB, reserve 2048 MiB; disk free \d+ GiB, floor 10 GiB`, s)
	assert.True(t, strings.HasSuffix(s, "3 jobs, 3 attempts\n"), s)
}
