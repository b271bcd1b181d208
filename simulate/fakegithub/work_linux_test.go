package fakegithub_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// procStat reads a process's resident set (bytes) and CPU time (clock
// ticks, user + system) from /proc.
func procStat(t *testing.T, pid int) (rss uint64, ticks uint64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	pages, _ := strconv.ParseUint(f[21], 10, 64)
	return pages * uint64(os.Getpagesize()), utime + stime
}

func TestRunnerUsesWhatTheJobAsks(t *testing.T) {
	t.Parallel()
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t)
	ctx := ctxT(t, 30*time.Second)
	const mem = 96 << 20
	job := s.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"x"}, Duration: 2 * time.Second, MemoryBytes: mem, CPUMillicores: 500})
	jit, _, err := restClient(t, s, token).Actions.GenerateRepoJITConfig(ctx, owner, name, jitRequest("rm-1", "self-hosted", "x"))
	require.NoError(t, err)
	p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
	pid := p.cmd.Process.Pid
	idleRSS, _ := procStat(t, pid)
	require.NoError(t, s.WaitFor(ctx, func() bool { j, _ := s.Job(job); return j.Status == "in_progress" }))

	var peak uint64
	require.Eventually(t, func() bool {
		rss, _ := procStat(t, pid)
		peak = max(peak, rss)
		return peak >= mem
	}, 5*time.Second, 20*time.Millisecond, "RSS rises to the job's memory")
	_, cpu0 := procStat(t, pid)
	start := time.Now()
	require.NoError(t, s.WaitFor(ctx, func() bool { return time.Since(start) >= time.Second }))
	_, cpu1 := procStat(t, pid)
	millicores := float64(cpu1-cpu0) * 10 * 1000 / (float64(time.Since(start)) / float64(time.Second) * 1000) // 100 ticks a second
	// Other tests compete for the CPU, so only bounds hold: it burns, and
	// no more than it was asked.
	assert.Greater(t, millicores, 100.0, "CPU burnt for the job's 500 millicores")
	assert.Less(t, millicores, 750.0, "CPU burnt for the job's 500 millicores")
	assert.Less(t, idleRSS, uint64(mem/2))
	assert.Equal(t, 0, p.exitCode(t, 10*time.Second), p.out.String())
}
