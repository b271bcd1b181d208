package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// Repo is the repository every scenario's jobs run for.
const Repo = "octo/chaos"

// tokenEnv is the variable the daemon reads its token from: a custom name,
// so a launcher that strips known names only is caught by the secret scan.
const tokenEnv = "CHAOS_GH_TOKEN"

// DaemonPackage is the import path of the program the run starts.
const DaemonPackage = "github.com/runner-manager/runner-manager/frontends/cli/cmd/runner-manager"

// BuildDaemon builds the runner-manager program into dir (without -race:
// the daemon is what is measured, not checked) and returns its path.
func BuildDaemon(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "runner-manager")
	// Stamped as a release is, so that the update scenario's release of it
	// names the version it says it runs.
	cmd := exec.CommandContext(ctx, goTool, "build", "-ldflags", "-X github.com/runner-manager/runner-manager.stampedVersion="+Version, "-o", bin, DaemonPackage)
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Dir(file) // inside the module, wherever the caller runs
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // the journal needs cgo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", DaemonPackage, err, out)
	}
	return bin, nil
}

// Version is the version BuildDaemon stamps into the program.
const Version = "v0.0.0-chaos"

// Env is what every scenario shares: the programs to run and where to put
// scenario directories.
type Env struct {
	// Daemon is the runner-manager program (BuildDaemon).
	Daemon string
	// RunnerDir is an installed fake runner (githubtest.BuildFakeRunner).
	RunnerDir string
	// Dir holds one directory per scenario (home, config, data, logs).
	Dir string
	// Logf, when set, narrates the run.
	Logf func(format string, args ...any)
}

// World is one scenario's world: a fake GitHub, a home with the CLI's
// configuration and data directory, and the daemon child process.
type World struct {
	env Env
	// bin is the world's own copy of env.Daemon (a hard link), which the
	// update scenario replaces.
	bin     string
	Mode    rm.Mode
	Fake    *fakegithub.Server
	Home    string
	DataDir string
	Config  string
	LogPath string
	token   string
	label   string
	started time.Time
	// stall is how long without a job started or completed a wait accepts.
	stall time.Duration
	// spares is how many warm spares the policy keeps listening while
	// idle: its default spare in scale-set mode, none in classic mode.
	spares int
	// extraEnv is added to the daemon's environment (Scenario.DaemonEnv).
	extraEnv []string

	mu     sync.Mutex
	daemon *exec.Cmd
	exited chan struct{}
	starts []time.Time
	// longestJob is the longest job queued so far.
	longestJob time.Duration
	// faultEnds are when faults ended or the daemon came back.
	faultEnds []time.Time
	logFile   *os.File
	sampler   *sampler
	// cliOut is every CLI call's output, searched for credentials (leaks.go).
	cliOut []Text
}

// newWorld sets a world up as a user would: init, then policy add, against
// a fake GitHub that knows Repo.
func newWorld(ctx context.Context, env Env, name string, mode rm.Mode, max, minIdle int, opts ...fakegithub.Option) (*World, error) {
	home := filepath.Join(env.Dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	token := "ghp_chaos" + rm.NewAttemptID().String()
	var err error
	base := []fakegithub.Option{
		fakegithub.WithToken(token), fakegithub.WithRepo(Repo),
		fakegithub.WithPollTimeout(2 * time.Second),
		fakegithub.WithOfflineAfter(5 * time.Second),
		fakegithub.WithRunnerBootDelay(0), // the scenarios' timings predate the boot delay
	}
	w := &World{
		env: env, Mode: mode, Home: home, DataDir: filepath.Join(home, "data"),
		Config: filepath.Join(home, "config.toml"), LogPath: filepath.Join(home, "daemon.log"),
		token: token, label: "chaos", started: time.Now(),
	}
	if mode == rm.ModeScaleSet {
		// policy add's default: spares sized by the day, at most this
		// many idle runners kept on purpose while the daemon runs.
		w.spares = rm.AutoSpares(max)
	}
	if w.bin, err = ownCopy(env.Daemon, filepath.Join(home, "bin")); err != nil {
		return nil, err
	}
	w.Fake = fakegithub.NewServer(append(base, opts...)...)
	var f *os.File
	f, err = os.OpenFile(w.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		w.Fake.Close()
		return nil, err
	}
	w.logFile = f
	if _, err := w.CLI(ctx, "init", "--github-url", w.Fake.URL(), "--token-env", tokenEnv, "--repo", Repo); err != nil {
		w.Close()
		return nil, err
	}
	add := []string{"policy", "add", "chaos", "--repo", Repo, "--max", strconv.Itoa(max), "--min-idle", strconv.Itoa(minIdle),
		"--runner-dir", env.RunnerDir, "--memory-estimate", "64MiB"}
	if mode == rm.ModeClassic {
		add = append(add, "--labels", w.label)
	} else {
		add = append(add, "--scale-set", w.label)
	}
	if _, err := w.CLI(ctx, add...); err != nil {
		w.Close()
		return nil, err
	}
	w.sampler = newSampler(w)
	return w, nil
}

func (w *World) logf(format string, args ...any) {
	if w.env.Logf != nil {
		w.env.Logf("%s +%4.1fs: %s", filepath.Base(w.Home), time.Since(w.started).Seconds(), fmt.Sprintf(format, args...))
	}
}

// ownCopy hard-links the program at bin into dir (a copy across file
// systems) and returns its path.
func ownCopy(bin, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(bin))
	if err := os.Link(bin, dst); err == nil {
		return dst, nil
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, data, 0o755)
}

// environ is the daemon's and the CLI's environment: what a user's shell
// would hold, the token under a custom name, and an unrelated secret that
// must never reach a runner.
func (w *World) environ() []string {
	env := []string{
		"HOME=" + w.Home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(w.Home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(w.Home, ".local", "state"),
		"RUNNER_MANAGER_CONFIG=" + w.Config,
		"RUNNER_MANAGER_DATA_DIR=" + w.DataDir,
		tokenEnv + "=" + w.token,
		"CHAOS_UNRELATED_SECRET=" + unrelatedSecret,
	}
	return append(env, w.extraEnv...)
}

// unrelatedSecret is a value of the daemon's environment no runner may see.
const unrelatedSecret = "chaos-unrelated-secret-7f3a"

// CLI runs the program with args and returns its standard output; a non-zero
// exit is an error carrying both outputs.
func (w *World) CLI(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Env, cmd.Dir = w.environ(), w.Home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	defer w.keepCLIOutput(args, &out, &errb)
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("runner-manager %v: %w\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
	}
	return out.String(), nil
}

// StartDaemon starts `runner-manager run` as a child process, its logs
// appended to LogPath.
func (w *World) StartDaemon() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon != nil {
		return errors.New("the daemon is already running")
	}
	fmt.Fprintf(w.logFile, "\n===== chaos: daemon start %s =====\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(w.bin, "run")
	cmd.Env, cmd.Dir = w.environ(), w.Home
	cmd.Stdout, cmd.Stderr = w.logFile, w.logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	w.daemon, w.exited = cmd, exited
	w.starts = append(w.starts, time.Now())
	w.logf("daemon started (pid %d)", cmd.Process.Pid)
	return nil
}

// DaemonPID is the running daemon's pid (0 when none runs).
func (w *World) DaemonPID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon == nil {
		return 0
	}
	return w.daemon.Process.Pid
}

// Kill9 kills the daemon with SIGKILL (its runners live on) and waits for
// it to be gone.
func (w *World) Kill9() error {
	w.mu.Lock()
	cmd, exited := w.daemon, w.exited
	w.daemon = nil
	w.mu.Unlock()
	if cmd == nil {
		return errors.New("no daemon to kill")
	}
	fmt.Fprintf(w.logFile, "\n===== chaos: kill -9 %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	w.logf("daemon killed -9")
	return nil
}

// Stop sends SIGTERM and waits up to wait for the daemon to exit; past it
// the daemon is killed and an error says it did not stop.
func (w *World) Stop(wait time.Duration) error {
	w.mu.Lock()
	cmd, exited := w.daemon, w.exited
	w.daemon = nil
	w.mu.Unlock()
	if cmd == nil {
		return nil
	}
	fmt.Fprintf(w.logFile, "\n===== chaos: SIGTERM %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
		w.logf("daemon stopped on SIGTERM (exit %d)", cmd.ProcessState.ExitCode())
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("the daemon exited %d on SIGTERM", code)
		}
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("the daemon did not stop within %s of SIGTERM: killed", wait)
	}
}

// DaemonStarts lists when the daemon was started, oldest first.
func (w *World) DaemonStarts() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.starts...)
}

// DaemonAlive reports whether the daemon child still runs (a crash ends it).
func (w *World) DaemonAlive() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon == nil {
		return false
	}
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// Enqueue queues n jobs of duration d for the world's policy.
func (w *World) Enqueue(n int, d time.Duration) []int64 {
	w.mu.Lock()
	w.longestJob = max(w.longestJob, d)
	w.mu.Unlock()
	ids := make([]int64, 0, n)
	for range n {
		ids = append(ids, w.Fake.EnqueueJob(fakegithub.JobSpec{Repo: Repo, Labels: []string{w.label}, Duration: d, MemoryBytes: 4 << 20}))
	}
	return ids
}

// Close stops the daemon, ends the runner processes left behind (found by
// the scan, each by its pid), and closes the fake.
func (w *World) Close() {
	_ = w.Stop(30 * time.Second)
	if w.sampler != nil {
		w.sampler.stop()
	}
	if procs, err := scanProcs(w); err == nil {
		for _, p := range procs {
			if proc, err := os.FindProcess(p.PID); err == nil {
				_ = proc.Kill()
			}
		}
	}
	if w.Fake != nil {
		w.Fake.Close()
	}
	if w.logFile != nil {
		_ = w.logFile.Close()
	}
}

// LogTail returns the last n lines of the daemon's log.
func (w *World) LogTail(n int) string {
	b, err := os.ReadFile(w.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
