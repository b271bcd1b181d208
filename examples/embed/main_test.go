package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example is built and run as a user would: every job is served by a
// runner of its own, concluded in the journal, with the peak memory its
// meter saw, on a host whose admission has its defaults.
func TestExample(t *testing.T) {
	s := runExample(t, "-jobs", "3")
	servedEach(t, s)
	assert.Regexp(t, `admission: host memory [1-9]\d* MiB, reserve 2048 MiB; disk free \d+ GiB, floor 10 GiB`, s)
	assert.True(t, strings.HasSuffix(s, "3 jobs, 3 attempts\n"), s)
}

// With -own, the jobs run through the program's own parts: each attempt
// was started by its launcher (one line of it per attempt, and the
// program's count of the journal's attempts it launched), the demand was
// its queue's (figures told, GitHub's job list never polled), and GitHub
// registered the runners that ran the jobs.
func TestExampleOwnParts(t *testing.T) {
	s := runExample(t, "-jobs", "3", "-own")
	servedEach(t, s)
	launched := regexp.MustCompile(`(?m)^launcher: attempt (\S+) of policy "embed" started, pid [1-9]\d*$`).FindAllStringSubmatch(s, -1)
	ids := map[string]bool{}
	for _, l := range launched {
		ids[l[1]] = true
	}
	assert.Len(t, ids, 3, "the own launcher started each of the 3 attempts: %s", s)
	m := regexp.MustCompile(`(?m)^own launcher: (\d+) of (\d+) attempts; own queue: (\d+) figures told; GitHub's job polls: (\d+)$`).FindStringSubmatch(s)
	require.NotNil(t, m, s)
	assert.Equal(t, []string{"3", "3"}, m[1:3], "every attempt in the journal came from the own launcher")
	told, err := strconv.Atoi(m[3])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, told, 2, "the loop watched the queue: its first figure and the jobs' completions")
	assert.Equal(t, "0", m[4], "GitHub's demand is never polled: the queue is the demand")
	assert.True(t, strings.Contains(s, "3 jobs, 3 attempts\n"), s)
}

// runExample builds the example and runs it with args, as a user would.
func runExample(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "embed")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a hung host fails, not the whole run
	defer cancel()
	out, err = exec.CommandContext(ctx, bin, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// servedEach checks that each of 3 jobs was served once, by a runner of
// its own concluded as a completed job, with the memory its meter saw.
func servedEach(t *testing.T, s string) {
	t.Helper()
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
}
