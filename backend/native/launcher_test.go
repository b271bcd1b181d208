//go:build linux

package native_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
)

// fakeListener stands in for bin/Runner.Listener: it finds its root as the
// real runner does (the parent of its executable's real directory), writes
// what it received there, and behaves as $MODE says.
const fakeListener = `#!/bin/sh
root="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)"
printf '%s' "$ACTIONS_RUNNER_INPUT_JITCONFIG" > "$root/jit.received"
for f in .runner .credentials .credentials_rsaparams; do
	printf '{"from":"the JIT config"}' > "$root/$f"
done
env | cut -d= -f1 | sort > "$root/env.names"
printf '%s' "$RUNNER_MANAGER_ATTEMPT" > "$root/attempt.received"
pwd -P > "$root/cwd.seen"
mkdir -p "$root/_diag"
echo "listening" > "$root/_diag/Runner_$(date -u +%Y%m%d-%H%M%S)-utc.log"
echo "listener args: $*"
echo "to stderr" >&2
case "$MODE" in
exit3) exit 3 ;;
job) echo "running a job" > "$root/_diag/Worker_$(date -u +%Y%m%d-%H%M%S)-utc.log" ;;
warm)
	printf '%s' "$HOME" > "$root/home.seen"
	printf '%s' "$npm_config_cache" > "$root/npm.seen"
	cat "$HOME/.gitconfig" > "$root/gitconfig.seen" 2>/dev/null
	echo "$RUNNER_MANAGER_ATTEMPT" >> "$root/_work/runs"
	echo planted > "$HOME/.planted"
	cp "$root/_work/runs" "$root/runs.seen" ;;
sleep) sleep 60 & wait ;;
ignore-term)
	trap '' TERM
	sleep 60 &
	echo $! > "$root/child.pid"
	wait ;;
esac
exit 0
`

// fakeRunner lays out an installed runner in dir and returns it.
func fakeRunner(t *testing.T, dir string) string {
	t.Helper()
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"bin/Runner.Listener":    {fakeListener, 0o755},
		"bin/Runner.Worker.dll":  {"worker", 0o644},
		"bin/nested/deep/lib.so": {"lib", 0o755},
		"externals/node20/node":  {"node", 0o755},
		"run.sh":                 {"#!/bin/sh\n", 0o755},
		"config.sh":              {"#!/bin/sh\n", 0o755},
		".env":                   {"LANG=C.UTF-8\n", 0o644},
		".path":                  {"/usr/bin:/bin\n", 0o644},
		".runner":                {"{\"agentName\":\"installed\"}", 0o644},
		"big.bin":                {strings.Repeat("x", 2<<20), 0o644},
	}
	for name, f := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(f.body), f.mode))
		require.NoError(t, os.Chmod(path, f.mode))
	}
	require.NoError(t, os.Symlink("Runner.Worker.dll", filepath.Join(dir, "bin", "worker-link")))
	return dir
}

func launch(t *testing.T, l *native.Launcher, runnerDir, mode string) (rm.AttemptID, rm.Process) {
	t.Helper()
	id := rm.NewAttemptID()
	p, err := l.Launch(t.Context(), rm.LaunchSpec{
		Attempt:   id,
		RunnerDir: runnerDir,
		JITConfig: "secret-jit-" + id.String(),
		Env:       []string{"MODE=" + mode, "EXTRA=1"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Stop(ctx, 0)
		_ = l.Cleanup(id, false) // its cgroup, where it has one
		_ = l.Close()
	})
	return id, p
}

func waitDone(t *testing.T, p rm.Process, within time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		t.Fatalf("process %d did not exit within %v", p.PID(), within)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestNativeLaunch(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_manager_token")
	t.Setenv("RUNNER_MANAGER_APP_KEY", "manager-secret")
	t.Setenv("ACTIONS_RUNNER_INPUT_URL", "stale")
	t.Setenv("MY_TOKEN", "ghp_under_a_custom_name")
	t.Setenv("SOME_AWS_SECRET", "aws-secret")
	t.Setenv("LC_TIME", "C")
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	l := native.NewLauncher(data)

	id, p := launch(t, l, installed, "exit0")
	waitDone(t, p, 10*time.Second)
	require.Equal(t, 0, p.ExitCode())
	root := l.Root(id)
	assert.Equal(t, filepath.Join(data, "attempts", id.String()), root)

	t.Run("env", func(t *testing.T) {
		assert.Equal(t, "secret-jit-"+id.String(), readFile(t, filepath.Join(root, "jit.received")),
			"the JIT config arrives in ACTIONS_RUNNER_INPUT_JITCONFIG, in the attempt root")
		assert.Equal(t, id.String(), readFile(t, filepath.Join(root, "attempt.received")))
		names := strings.Fields(readFile(t, filepath.Join(root, "env.names")))
		for _, want := range []string{"ACTIONS_RUNNER_INPUT_JITCONFIG", "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "RUNNER_MANAGER_ATTEMPT", "EXTRA", "MODE", "PATH", "LC_TIME"} {
			assert.Contains(t, names, want)
		}
		for _, never := range []string{"GITHUB_TOKEN", "RUNNER_MANAGER_APP_KEY", "ACTIONS_RUNNER_INPUT_URL", "MY_TOKEN", "SOME_AWS_SECRET"} {
			assert.NotContains(t, names, never, "the manager's secrets stay with the manager")
		}
		if os.Geteuid() == 0 {
			assert.Contains(t, names, "RUNNER_ALLOW_RUNASROOT")
		} else {
			assert.NotContains(t, names, "RUNNER_ALLOW_RUNASROOT")
		}
	})
	t.Run("cwd", func(t *testing.T) {
		realRoot, err := filepath.EvalSymlinks(root)
		require.NoError(t, err)
		assert.Equal(t, realRoot, strings.TrimSpace(readFile(t, filepath.Join(root, "cwd.seen"))))
	})
	t.Run("log", func(t *testing.T) {
		log := filepath.Join(root, "runner.log")
		assert.Equal(t, "listener args: run\nto stderr\n", readFile(t, log))
		info, err := os.Stat(log)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		assert.Equal(t, log, l.RunnerLog(id))
	})
	t.Run("root", func(t *testing.T) {
		info, err := os.Stat(root)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
		real, err := filepath.EvalSymlinks(filepath.Join(root, "bin", "Runner.Listener"))
		require.NoError(t, err)
		realRoot, err := filepath.EvalSymlinks(root)
		require.NoError(t, err)
		assert.Equal(t, realRoot, filepath.Dir(filepath.Dir(real)),
			"the runner resolves its root to the attempt's, not the install's")
	})
	t.Run("links", func(t *testing.T) {
		bin, err := os.Lstat(filepath.Join(root, "bin"))
		require.NoError(t, err)
		assert.True(t, bin.IsDir(), "bin/ is a real directory")
		for _, name := range []string{"bin/Runner.Listener", "bin/Runner.Worker.dll", "bin/nested/deep/lib.so", "big.bin"} {
			a, err := os.Stat(filepath.Join(installed, name))
			require.NoError(t, err)
			b, err := os.Stat(filepath.Join(root, name))
			require.NoError(t, err)
			assert.True(t, os.SameFile(a, b), "%s is a hard link", name)
		}
		nested, err := os.Lstat(filepath.Join(root, "bin", "nested"))
		require.NoError(t, err)
		assert.True(t, nested.IsDir())
		target, err := os.Readlink(filepath.Join(root, "bin", "worker-link"))
		require.NoError(t, err)
		assert.Equal(t, "Runner.Worker.dll", target)
		ext, err := os.Readlink(filepath.Join(root, "externals"))
		require.NoError(t, err)
		realInstalled, err := filepath.EvalSymlinks(installed)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(realInstalled, "externals"), ext)
		for _, name := range []string{"run.sh", "config.sh", ".env", ".path"} {
			a, err := os.Stat(filepath.Join(installed, name))
			require.NoError(t, err)
			b, err := os.Lstat(filepath.Join(root, name))
			require.NoError(t, err)
			assert.True(t, b.Mode().IsRegular(), "%s is a file", name)
			assert.False(t, os.SameFile(a, b), "%s is a copy", name)
			assert.Equal(t, a.Mode(), b.Mode(), name)
			assert.Equal(t, readFile(t, filepath.Join(installed, name)), readFile(t, filepath.Join(root, name)))
		}
		assert.NotContains(t, readFile(t, filepath.Join(root, ".runner")), "installed",
			"an installed runner's configuration is never carried over: the root's is the JIT config's")
		for _, dir := range []string{"_work", "_diag"} {
			info, err := os.Lstat(filepath.Join(root, dir))
			require.NoError(t, err)
			assert.True(t, info.IsDir(), dir)
		}
	})
}

func TestNativeLaunchPassEnv(t *testing.T) {
	t.Setenv("BUILD_CACHE_URL", "http://cache")
	t.Setenv("BUILD_MIRROR", "http://mirror")
	t.Setenv("MY_TOKEN", "ghp_under_a_custom_name")
	l := native.NewLauncher(t.TempDir(), native.WithPassEnv("BUILD_*"))
	id, p := launch(t, l, fakeRunner(t, t.TempDir()), "exit0")
	waitDone(t, p, 10*time.Second)
	names := strings.Fields(readFile(t, filepath.Join(l.Root(id), "env.names")))
	assert.Contains(t, names, "BUILD_CACHE_URL", "passed by name")
	assert.Contains(t, names, "BUILD_MIRROR")
	assert.NotContains(t, names, "MY_TOKEN")
}

func TestNativeLaunchArgv(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	id, p := launch(t, l, fakeRunner(t, t.TempDir()), "sleep")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(l.Root(id), "jit.received"))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)

	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/cmdline")
	require.NoError(t, err)
	// The fake listener is a script: the kernel puts its interpreter first.
	assert.True(t, strings.HasSuffix(string(cmdline), filepath.Join(l.Root(id), "bin", "Runner.Listener")+"\x00run\x00"),
		"argv is the listener and run: %q", cmdline)
	assert.NotContains(t, string(cmdline), "secret-jit", "the JIT config is never in argv")

	pgid, err := syscall.Getpgid(p.PID())
	require.NoError(t, err)
	assert.Equal(t, p.PID(), pgid, "a process group of its own")
	start, err := platform.StartTime(p.PID())
	require.NoError(t, err)
	assert.Equal(t, start, p.Start())
	assert.Equal(t, -1, p.ExitCode(), "no exit code while it runs")

	began := time.Now()
	require.NoError(t, p.Stop(t.Context(), 10*time.Second))
	assert.Less(t, time.Since(began), 5*time.Second, "a runner that heeds SIGTERM is not waited for the whole grace")
	assert.Equal(t, 128+int(syscall.SIGTERM), p.ExitCode())
}

func TestNativeExitCode(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	_, p := launch(t, l, fakeRunner(t, t.TempDir()), "exit3")
	waitDone(t, p, 10*time.Second)
	assert.Equal(t, 3, p.ExitCode())
	assert.NoError(t, p.Stop(t.Context(), time.Second), "stopping an exited process is a no-op")
}

func TestNativeStopIgnoringTerm(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	id, p := launch(t, l, fakeRunner(t, t.TempDir()), "ignore-term")
	childFile := filepath.Join(l.Root(id), "child.pid")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(childFile)
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	}, 10*time.Second, 10*time.Millisecond)
	child, err := strconv.Atoi(strings.TrimSpace(readFile(t, childFile)))
	require.NoError(t, err)
	childStart, err := platform.StartTime(child)
	require.NoError(t, err)

	const grace = 300 * time.Millisecond
	began := time.Now()
	require.NoError(t, p.Stop(t.Context(), grace))
	took := time.Since(began)
	assert.GreaterOrEqual(t, took, grace, "SIGTERM is ignored: killed only after the grace")
	assert.Less(t, took, 5*time.Second)
	assert.Equal(t, 128+int(syscall.SIGKILL), p.ExitCode())
	require.Eventually(t, func() bool { return !platform.Alive(child, childStart) },
		5*time.Second, 10*time.Millisecond, "the listener's child went with its group")
}

func TestNativeStopContext(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	id, p := launch(t, l, fakeRunner(t, t.TempDir()), "ignore-term")
	// The child's pid is written after the trap: a SIGTERM before it would end the script.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(l.Root(id), "child.pid"))
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	}, 10*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := p.Stop(ctx, time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Stop gives up when its context ends")
}

func TestNativeCrossFilesystem(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "runner-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	data := t.TempDir()
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Stat(shm, &a))
	require.NoError(t, syscall.Stat(data, &b))
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same filesystem as the temp dir")
	}
	installed := fakeRunner(t, shm)
	l := native.NewLauncher(data)
	id, p := launch(t, l, installed, "exit3")
	waitDone(t, p, 10*time.Second)
	assert.Equal(t, 3, p.ExitCode(), "the copied listener runs")
	for _, name := range []string{"bin/Runner.Listener", "bin/nested/deep/lib.so", "big.bin"} {
		src, err := os.Stat(filepath.Join(installed, name))
		require.NoError(t, err)
		dst, err := os.Stat(filepath.Join(l.Root(id), name))
		require.NoError(t, err)
		assert.False(t, os.SameFile(src, dst), "%s: another filesystem, so a copy", name)
		assert.Equal(t, src.Mode(), dst.Mode(), name)
		assert.Equal(t, src.Size(), dst.Size(), name)
	}
	require.NoError(t, l.Cleanup(id, false))
	_, err = os.Stat(filepath.Join(data, "attempts", ".spare"))
	if err == nil {
		entries, err := os.ReadDir(filepath.Join(data, "attempts", ".spare"))
		require.NoError(t, err)
		assert.Empty(t, entries, "no spare roots of copies")
	}
}

func TestNativeLaunchErrors(t *testing.T) {
	installed := fakeRunner(t, t.TempDir())
	tests := []struct {
		name string
		spec func(data string, id rm.AttemptID) rm.LaunchSpec
		want string
	}{
		{"NoAttempt", func(string, rm.AttemptID) rm.LaunchSpec {
			return rm.LaunchSpec{RunnerDir: installed, JITConfig: "secret-jit"}
		}, "no attempt"},
		{"NoJITConfig", func(_ string, id rm.AttemptID) rm.LaunchSpec {
			return rm.LaunchSpec{Attempt: id, RunnerDir: installed}
		}, "no JIT configuration"},
		{"MissingRunner", func(data string, id rm.AttemptID) rm.LaunchSpec {
			return rm.LaunchSpec{Attempt: id, RunnerDir: filepath.Join(data, "nope"), JITConfig: "secret-jit"}
		}, "runner install"},
		{"NotARunner", func(data string, id rm.AttemptID) rm.LaunchSpec {
			return rm.LaunchSpec{Attempt: id, RunnerDir: data, JITConfig: "secret-jit"}
		}, "has no bin/Runner.Listener"},
		{"NoneInstalled", func(data string, id rm.AttemptID) rm.LaunchSpec {
			return rm.LaunchSpec{Attempt: id, JITConfig: "secret-jit"}
		}, "no runner installed"},
		{"RootExists", func(data string, id rm.AttemptID) rm.LaunchSpec {
			require.NoError(t, os.MkdirAll(filepath.Join(data, "attempts", id.String()), 0o700))
			return rm.LaunchSpec{Attempt: id, RunnerDir: installed, JITConfig: "secret-jit"}
		}, "exists already"},
		{"NotExecutable", func(data string, id rm.AttemptID) rm.LaunchSpec {
			broken := fakeRunner(t, t.TempDir())
			require.NoError(t, os.WriteFile(filepath.Join(broken, "bin", "Runner.Listener"), []byte("\x00\x01garbage"), 0o755))
			return rm.LaunchSpec{Attempt: id, RunnerDir: broken, JITConfig: "secret-jit"}
		}, "start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			l := native.NewLauncher(data)
			p, err := l.Launch(t.Context(), tt.spec(data, rm.NewAttemptID()))
			require.Error(t, err)
			assert.Nil(t, p)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "secret-jit", "a JIT config never reaches an error")
		})
	}
	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := native.NewLauncher(t.TempDir()).Launch(ctx, rm.LaunchSpec{
			Attempt: rm.NewAttemptID(), RunnerDir: installed, JITConfig: "secret-jit",
		})
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestNativeLaunchNewestInstalled(t *testing.T) {
	data := t.TempDir()
	fakeRunner(t, filepath.Join(data, "runners", "2.321.0"))
	old := fakeRunner(t, filepath.Join(data, "runners", "2.9.0"))
	require.NoError(t, os.WriteFile(filepath.Join(old, "bin", "Runner.Listener"), []byte("#!/bin/sh\nexit 9\n"), 0o755))
	l := native.NewLauncher(data)
	id := rm.NewAttemptID()
	p, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: id, JITConfig: "x", Env: []string{"MODE=exit3"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Cleanup(id, false) })
	waitDone(t, p, 10*time.Second)
	assert.Equal(t, 3, p.ExitCode(), "2.321.0 is newer than 2.9.0")
}

// startGroupLeader starts a process the way the launcher starts a runner,
// as a stand-in for one started before a restart.
func startGroupLeader(t *testing.T, args ...string) (*exec.Cmd, uint64, <-chan error) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	start, err := platform.StartTime(cmd.Process.Pid)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	})
	return cmd, start, waited
}

// TestNativeAdopt: an adopted runner, not the launcher's child, is
// watched through a pidfd (its exit seen at once, not at the next 2 s
// poll), and has no exit code (the suite's Restart checks the rest).
func TestNativeAdopt(t *testing.T) {
	l := native.NewLauncher(t.TempDir())
	cmd, start, _ := startGroupLeader(t, "sleep", "60")
	p, err := l.Adopt(rm.NewAttemptID(), cmd.Process.Pid, start)
	require.NoError(t, err)
	select {
	case <-p.Done():
		t.Fatal("done while it runs")
	case <-time.After(100 * time.Millisecond):
	}
	killed := time.Now()
	require.NoError(t, cmd.Process.Kill())
	// The poll fallback looks every 2 s; a pidfd tells at once.
	waitDone(t, p, time.Second)
	t.Logf("exit seen %v after the kill", time.Since(killed))
	assert.Equal(t, -1, p.ExitCode(), "not our child: no exit status")
}

func TestNativeCleanup(t *testing.T) {
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	now := time.Now()
	l := native.NewLauncher(data, native.WithKeepFailed(24*time.Hour),
		native.WithClock(func() time.Time { return now }))
	run := func() rm.AttemptID {
		id, p := launch(t, l, installed, "exit0")
		waitDone(t, p, 10*time.Second)
		return id
	}
	kept := func(id rm.AttemptID) string { return filepath.Join(data, "attempts", ".failed", id.String()) }

	ok := run()
	require.NoError(t, l.Cleanup(ok, false))
	assert.NoDirExists(t, l.Root(ok))
	assert.NoDirExists(t, kept(ok))
	assert.FileExists(t, filepath.Join(installed, "bin", "Runner.Listener"), "the install is untouched")
	assert.DirExists(t, filepath.Join(installed, "externals", "node20"), "the install is untouched")

	failed := run()
	require.NoError(t, l.Cleanup(failed, true))
	assert.NoDirExists(t, l.Root(failed))
	assert.FileExists(t, filepath.Join(kept(failed), "runner.log"), "kept for debugging")
	assert.Equal(t, filepath.Join(datadir.New(data).KeptLog(failed), "runner.log"), l.RunnerLog(failed), "its logs are kept as a finished one's")
	assert.DirExists(t, filepath.Join(kept(failed), "_diag"), "kept for debugging")
	for _, secret := range []string{".runner", ".credentials", ".credentials_rsaparams", "jit.received"} {
		assert.NoFileExists(t, filepath.Join(kept(failed), secret), "a kept root holds no credentials")
	}

	require.NoError(t, l.Cleanup(failed, true), "cleaning up twice is harmless")
	require.NoError(t, l.Cleanup(rm.NewAttemptID(), false), "a root never made is not an error")

	now = now.Add(23 * time.Hour)
	require.NoError(t, l.Cleanup(run(), false))
	assert.DirExists(t, kept(failed), "kept for 24 h")
	now = now.Add(2 * time.Hour)
	require.NoError(t, l.Cleanup(run(), false))
	assert.NoDirExists(t, kept(failed), "pruned after 24 h")

	noKeep := native.NewLauncher(data, native.WithKeepFailed(0))
	gone := run()
	require.NoError(t, noKeep.Cleanup(gone, true))
	assert.NoDirExists(t, l.Root(gone))
	assert.NoDirExists(t, kept(gone), "KeepFailed 0 keeps nothing")

	require.Error(t, l.Cleanup(rm.AttemptID{}, false))
}

// TestNativeCleanupScrubsEarlierKeptRoots: roots kept with their
// credentials by an earlier manager lose them at the first Cleanup.
func TestNativeCleanupScrubsEarlierKeptRoots(t *testing.T) {
	data := t.TempDir()
	old := filepath.Join(data, "attempts", ".failed", rm.NewAttemptID().String())
	require.NoError(t, os.MkdirAll(filepath.Join(old, "_diag"), 0o700))
	for _, name := range []string{".runner", ".credentials", ".credentials_rsaparams", "runner.log", "_diag/Runner_1-utc.log"} {
		require.NoError(t, os.WriteFile(filepath.Join(old, name), []byte("x"), 0o600))
	}
	l := native.NewLauncher(data)
	require.NoError(t, l.Cleanup(rm.NewAttemptID(), false))
	for _, name := range []string{".runner", ".credentials", ".credentials_rsaparams"} {
		assert.NoFileExists(t, filepath.Join(old, name))
	}
	assert.FileExists(t, filepath.Join(old, "runner.log"))
	assert.FileExists(t, filepath.Join(old, "_diag", "Runner_1-utc.log"))
}

func TestNativeSpareRoots(t *testing.T) {
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	spares := func() int {
		entries, err := os.ReadDir(filepath.Join(data, "attempts", ".spare"))
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return len(entries)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(data, "attempts", ".spare", "left-by-an-earlier-manager", "bin"), 0o700))
	l := native.NewLauncher(data)
	run := func(mode string) rm.AttemptID {
		id, p := launch(t, l, installed, mode)
		waitDone(t, p, 10*time.Second)
		return id
	}
	sameListener := func(id rm.AttemptID) bool {
		a, err := os.Stat(filepath.Join(installed, "bin", "Runner.Listener"))
		require.NoError(t, err)
		b, err := os.Stat(filepath.Join(l.Root(id), "bin", "Runner.Listener"))
		require.NoError(t, err)
		return os.SameFile(a, b)
	}

	first := run("exit0")
	require.NoError(t, l.Cleanup(first, false))
	assert.Equal(t, 1, spares(), "the cleanup prepared a spare root and swept the stale one")

	second := run("exit0")
	assert.Zero(t, spares(), "the launch took the spare")
	assert.True(t, sameListener(second))
	assert.Equal(t, "secret-jit-"+second.String(), readFile(t, filepath.Join(l.Root(second), "jit.received")))
	assert.Equal(t, "listener args: run\nto stderr\n", readFile(t, filepath.Join(l.Root(second), "runner.log")),
		"a spare's log starts empty")

	var ids []rm.AttemptID
	for range 4 {
		ids = append(ids, run("exit0"))
	}
	for _, id := range append(ids, second) {
		require.NoError(t, l.Cleanup(id, false))
	}
	assert.Equal(t, 2, spares(), "at most two spares per install")

	// The install changes (removed and installed again at the same path):
	// spares of the old one are not used.
	listener := filepath.Join(installed, "bin", "Runner.Listener")
	require.NoError(t, os.Remove(listener))
	require.NoError(t, os.WriteFile(listener, []byte(fakeListener), 0o755))
	changed := run("exit3")
	assert.True(t, sameListener(changed), "built from the new install")
	assert.Zero(t, spares(), "stale spares thrown away")

	require.NoError(t, l.Cleanup(changed, false))
	assert.Equal(t, 1, spares())
	require.NoError(t, l.Close())
	assert.Zero(t, spares(), "Close removes the spares")
	entries, err := os.ReadDir(filepath.Join(data, "attempts"))
	require.NoError(t, err)
	for _, e := range entries {
		assert.Equal(t, ".spare", e.Name(), "no attempt root left")
	}
}
