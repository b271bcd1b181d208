package platform_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// startMarked starts `sleep 60` (or args) in dir as the leader of its own
// process group, with the attempt mark in its environment (none if mark is
// "").
func startMarked(t *testing.T, dir, mark string, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	if len(args) == 0 {
		args = []string{"sleep", "60"}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if mark != "" {
		cmd.Env = append(cmd.Env, platform.AttemptEnv+"="+mark)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd, done
}

func find(procs []rm.RunnerProcess, pid int) (rm.RunnerProcess, bool) {
	for _, p := range procs {
		if p.PID == pid {
			return p, true
		}
	}
	return rm.RunnerProcess{}, false
}

func TestRunnerProcesses(t *testing.T) {
	data := t.TempDir()
	id := rm.NewAttemptID()
	marked, _ := startMarked(t, filepath.Join(data, "attempts", id.String()), id.String())
	unmarked, _ := startMarked(t, filepath.Join(data, "attempts", "x"), "")
	garbled, _ := startMarked(t, filepath.Join(data, "attempts", "y"), "not-an-id")
	elsewhere, _ := startMarked(t, t.TempDir(), rm.NewAttemptID().String())

	procs, err := platform.RunnerProcesses("")
	require.NoError(t, err)
	p, ok := find(procs, marked.Process.Pid)
	require.True(t, ok, "a marked process is found")
	start, err := platform.StartTime(p.PID)
	require.NoError(t, err)
	assert.Equal(t, id, p.Attempt)
	assert.Equal(t, p.PID, p.PGID)
	assert.True(t, p.Leader())
	assert.Equal(t, start, p.Start)
	assert.Equal(t, filepath.Join(data, "attempts", id.String()), p.Cwd)
	assert.NotEmpty(t, p.Exe)
	_, ok = find(procs, unmarked.Process.Pid)
	assert.False(t, ok, "a process without the mark is no runner")
	g, ok := find(procs, garbled.Process.Pid)
	require.True(t, ok, "a garbled mark is still a mark")
	assert.True(t, g.Attempt.IsZero())

	under := platform.RunnersUnder(procs, filepath.Join(data, "attempts"))
	require.Len(t, under, 1, "only the runner naming an attempt under the directory: %+v", under)
	assert.Equal(t, marked.Process.Pid, under[0].PID)
	_, ok = find(under, elsewhere.Process.Pid)
	assert.False(t, ok, "another data directory's runner")
}

func TestRunnerProcessesFixture(t *testing.T) {
	root := t.TempDir()
	id := rm.NewAttemptID()
	write := func(pid int, environ, stat, cwd string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "environ"), []byte(environ), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o600))
		require.NoError(t, os.Symlink(cwd, filepath.Join(dir, "cwd")))
	}
	mark := platform.AttemptEnv + "=" + id.String()
	// A listener whose name holds a parenthesis and a space, leading group
	// 4100; its job's process in that group; a deleted root.
	write(4100, "HOME=/h\x00"+mark+"\x00", "4100 (Runner.Lis) ten) S 1 4100 4100 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 777 0 0\n", "/data/attempts/"+id.String())
	write(4101, mark+"\x00", "4101 (bash) S 4100 4100 4100 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 778 0 0\n", "/data/attempts/"+id.String()+"/_work")
	write(4200, mark+"\x00", "4200 (sleep) S 1 4200 4200 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 779 0 0\n", "/data/attempts/old (deleted)")
	write(4300, "PATH=/bin\x00", "4300 (sh) S 1 4300 4300 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 780 0 0\n", "/data/attempts/z")
	require.NoError(t, os.WriteFile(filepath.Join(root, "uptime"), []byte("1 1\n"), 0o600))

	procs, err := platform.RunnerProcesses(root)
	require.NoError(t, err)
	require.Len(t, procs, 3)
	got := map[int]rm.RunnerProcess{}
	for _, p := range procs {
		got[p.PID] = p
	}
	assert.Equal(t, rm.RunnerProcess{PID: 4100, PGID: 4100, Start: 777, Attempt: id, Cwd: "/data/attempts/" + id.String()}, got[4100])
	assert.Equal(t, 4100, got[4101].PGID)
	assert.False(t, got[4101].Leader())
	under := platform.RunnersUnder(procs, "/data/attempts")
	assert.Len(t, under, 2, "the deleted root's runner is not this directory's")
	assert.False(t, got[4200].WorksUnder("/data/attempts"))
	assert.False(t, got[4100].WorksUnder("/data/attempt"), "a prefix of a name is not a parent")
}

func TestStopRunnerProcess(t *testing.T) {
	data := t.TempDir()
	id := rm.NewAttemptID()
	cmd, done := startMarked(t, filepath.Join(data, "attempts", id.String()), id.String())
	procs, err := platform.RunnerProcesses("")
	require.NoError(t, err)
	p, ok := find(procs, cmd.Process.Pid)
	require.True(t, ok)

	job := p
	job.PGID = p.PID + 1 // not its group's leader
	require.Error(t, platform.StopRunnerProcess(job, time.Second), "only a group leader is stopped")

	require.NoError(t, platform.StopRunnerProcess(p, time.Minute))
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("SIGTERM did not stop the runner")
	}
	require.NoError(t, platform.StopRunnerProcess(p, time.Minute), "a group already gone is no error")

	t.Run("IgnoresTERM", func(t *testing.T) {
		id := rm.NewAttemptID()
		cmd, done := startMarked(t, filepath.Join(data, "attempts", id.String()), id.String(),
			"sh", "-c", `trap "" TERM; exec sleep 60`)
		var p rm.RunnerProcess
		require.Eventually(t, func() bool {
			procs, err := platform.RunnerProcesses("")
			require.NoError(t, err)
			var ok bool
			p, ok = find(procs, cmd.Process.Pid)
			return ok && p.Exe != "" && filepath.Base(p.Exe) == "sleep"
		}, 30*time.Second, 10*time.Millisecond, "the shell execs sleep")
		require.NoError(t, platform.StopRunnerProcess(p, 300*time.Millisecond))
		assert.True(t, platform.Alive(p.PID, p.Start), "SIGTERM is ignored")
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("SIGKILL did not follow the grace")
		}
	})
}

func TestAttemptOf(t *testing.T) {
	v, ok := platform.AttemptOf([]byte("A=1\x00" + platform.AttemptEnv + "=xyz\x00B=2"))
	assert.True(t, ok)
	assert.Equal(t, "xyz", v)
	_, ok = platform.AttemptOf([]byte("A=1\x00X" + platform.AttemptEnv + "=xyz"))
	assert.False(t, ok)
}
