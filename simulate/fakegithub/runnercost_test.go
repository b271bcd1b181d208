package fakegithub_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// TestRunnerCost: a fake runner priced as the real listener spends the
// boot's CPU time before it listens and holds the memory while it does.
func TestRunnerCost(t *testing.T) {
	t.Parallel()
	const bootCPU, idle = 300 * time.Millisecond, 48 << 20
	install := githubtest.BuildFakeRunner(t)
	s := newServer(t, fakegithub.WithRunnerBootDelay(0), fakegithub.WithRunnerCost(bootCPU, idle))
	c := restClient(t, s, token)
	ctx := ctxT(t, 60*time.Second)
	owner, name, _ := strings.Cut(repo, "/")
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, &gh.GenerateJITConfigRequest{
		Name: "rm-priced", RunnerGroupID: 1, Labels: []string{"self-hosted"},
	})
	require.NoError(t, err)
	p := startRunner(t, runnerRoot(t, install), jit.GetEncodedJITConfig())
	require.NoError(t, s.WaitFor(ctx, func() bool {
		for _, r := range s.Runners() {
			if r.Name == "rm-priced" && r.Online {
				return true
			}
		}
		return false
	}))
	pid := strconv.Itoa(p.cmd.Process.Pid)
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Skip("no /proc here to read the runner's figures")
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	cpu := time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ 100
	assert.GreaterOrEqual(t, cpu, bootCPU-20*time.Millisecond, "the boot's CPU time was spent before it listened")
	status, err := os.ReadFile("/proc/" + pid + "/status")
	require.NoError(t, err)
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			assert.GreaterOrEqual(t, kb<<10, uint64(idle), "it holds its memory while it listens")
		}
	}
}
