// Package fleet_test runs a fleet as people run one: several real
// runner-manager processes, each with its own data directory and host
// name, sharing one real PostgreSQL store and serving their own policies
// against one fake GitHub. The tests kill hosts and restart the database
// under them and check that every job ran once, no host touched another's
// runners, and nothing leaked.
package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/chaos"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// repo is the repository every host's jobs run for.
const repo = "octo/fleet"

// tokenEnv names the variable the hosts read their GitHub token from.
const tokenEnv = "FLEET_GH_TOKEN"

// heartbeat is the hosts' heartbeat in these tests, short so that a killed
// host is seen stale within seconds (three missed heartbeats).
const heartbeat = time.Second

var built struct {
	once           sync.Once
	dir, bin, runs string
	err            error
}

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(pgtest.Run(m), fakegithub.RemoveRunnerBuild, func() {
		if built.dir != "" {
			_ = os.RemoveAll(built.dir)
		}
	}))
}

// programs builds the runner-manager program (without -race: it is what
// runs, not what is checked) and the fake runner, once per test process.
func programs(t testing.TB) (daemon, runnerDir string) {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "runner-manager-fleet-bin-")
		if built.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			built.bin, built.err = chaos.BuildDaemon(ctx, built.dir)
		}
	})
	require.NoError(t, built.err)
	return built.bin, githubtest.BuildFakeRunner(t)
}

// fleet is one test's world: a fake GitHub, one database and its hosts.
type fleet struct {
	t      testing.TB
	bin    string
	runner string
	url    string
	token  string
	fake   *fakegithub.Server
	dir    string
	hosts  []*host
	// heartbeat is the hosts' [fleet] heartbeat (0: the default).
	heartbeat time.Duration
	// policyArgs are more flags of every `policy add`.
	policyArgs []string
	// bare hosts get no policy of their own (a fleet policy serves them).
	bare bool
}

// host is one member of the fleet: its home (configuration, data
// directory, log) and its daemon process.
type host struct {
	f       *fleet
	name    string
	home    string
	dataDir string
	config  string
	logPath string
	label   string // its policy's scale set, or its classic label
	// env is more of its daemon's environment ("KEY=value").
	env []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// newFleet makes a fleet on database url with a host per name, each with
// one policy of its own (scale set "ss-NAME" at max 4).
func newFleet(t testing.TB, url string, names ...string) *fleet {
	t.Helper()
	return newFleetWith(t, url, nil, names...)
}

// newFleetWith is newFleet with more options of the fake GitHub.
func newFleetWith(t testing.TB, url string, fakeOpts []fakegithub.Option, names ...string) *fleet {
	t.Helper()
	bin, runner := programs(t)
	token := "ghp_fleet" + rm.NewAttemptID().String()
	f := &fleet{t: t, bin: bin, runner: runner, url: url, token: token, dir: t.TempDir(), heartbeat: heartbeat}
	f.fake = fakegithub.NewServer(append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(repo),
		fakegithub.WithPollTimeout(2 * time.Second), fakegithub.WithOfflineAfter(5 * time.Second),
		fakegithub.WithRunnerBootDelay(0)}, fakeOpts...)...)
	t.Cleanup(f.close)
	for _, n := range names {
		f.addHost(n)
	}
	return f
}

func (f *fleet) addHost(name string) *host {
	f.t.Helper()
	h := &host{f: f, name: name, home: filepath.Join(f.dir, name), label: "ss-" + name}
	h.dataDir, h.config, h.logPath = filepath.Join(h.home, "data"), filepath.Join(h.home, "config.toml"), filepath.Join(h.home, "daemon.log")
	require.NoError(f.t, os.MkdirAll(h.home, 0o700))
	lf, err := os.OpenFile(h.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(f.t, err)
	h.log = lf
	f.hosts = append(f.hosts, h)
	h.cli("init", "--github-url", f.fake.URL(), "--token-env", tokenEnv, "--repo", repo)
	if f.bare {
		return h
	}
	h.cli(append([]string{"policy", "add", "p-" + name, "--repo", repo, "--max", "4", "--runner-dir", f.runner,
		"--memory-estimate", "64MiB", "--scale-set", h.label}, f.policyArgs...)...)
	return h
}

// environ is a host's environment: a user's shell with the fleet's store,
// the host's name and the token under a custom name.
func (h *host) environ() []string {
	env := []string{
		"HOME=" + h.home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(h.home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(h.home, ".local", "state"),
		"RUNNER_MANAGER_CONFIG=" + h.config,
		"RUNNER_MANAGER_DATA_DIR=" + h.dataDir,
		"RUNNER_MANAGER_STORE=" + h.f.url,
		"RUNNER_MANAGER_HOST_NAME=" + h.name,
		tokenEnv + "=" + h.f.token,
		"RUNNER_MANAGER_LOG_LEVEL=debug",
	}
	if h.f.heartbeat > 0 {
		env = append(env, "RUNNER_MANAGER_HEARTBEAT="+h.f.heartbeat.String())
	}
	return append(env, h.env...)
}

// cli runs the program as this host and returns its standard output,
// failing the test on a non-zero exit.
func (h *host) cli(args ...string) string {
	h.f.t.Helper()
	out, err := h.try(args...)
	require.NoError(h.f.t, err)
	return out
}

func (h *host) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.f.bin, args...)
	cmd.Env, cmd.Dir = h.environ(), h.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: runner-manager %v: %w\nstdout: %s\nstderr: %s", h.name, args, err, out.String(), errb.String())
	}
	return out.String(), nil
}

// start starts the host's daemon (`runner-manager run`).
func (h *host) start() {
	h.f.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Nil(h.f.t, h.cmd, "%s runs already", h.name)
	fmt.Fprintf(h.log, "\n===== fleet: start %s =====\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(h.f.bin, "run")
	cmd.Env, cmd.Dir = h.environ(), h.home
	cmd.Stdout, cmd.Stderr = h.log, h.log
	require.NoError(h.f.t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	h.cmd, h.exited = cmd, exited
}

// alive reports whether the daemon still runs.
func (h *host) alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return false
	}
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// kill9 kills the daemon with SIGKILL; its runners live on.
func (h *host) kill9() {
	h.f.t.Helper()
	cmd, exited := h.take()
	require.NotNil(h.f.t, cmd, "%s does not run", h.name)
	fmt.Fprintf(h.log, "\n===== fleet: kill -9 %s =====\n", time.Now().Format(time.RFC3339Nano))
	require.NoError(h.f.t, cmd.Process.Signal(syscall.SIGKILL))
	<-exited
}

// stop sends SIGTERM and waits for a clean exit (an error past wait, or
// for another exit code).
func (h *host) stop(wait time.Duration) error {
	cmd, exited := h.take()
	if cmd == nil {
		return nil
	}
	fmt.Fprintf(h.log, "\n===== fleet: SIGTERM %s =====\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("%s exited %d on SIGTERM", h.name, code)
		}
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM", h.name, wait)
	}
}

func (h *host) take() (*exec.Cmd, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cmd, exited := h.cmd, h.exited
	h.cmd, h.exited = nil, nil
	return cmd, exited
}

// logTail is the last n lines of the host's daemon log.
func (h *host) logTail(n int) string {
	b, err := os.ReadFile(h.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// enqueue queues n jobs for the host's policy, of durations cycling
// through 200–500 ms.
func (h *host) enqueue(n int) {
	for i := range n {
		d := time.Duration(200+100*(i%4)) * time.Millisecond
		h.f.fake.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{h.label}, Duration: d, MemoryBytes: 4 << 20,
			Name: fmt.Sprintf("%s-job-%d", h.name, i%5)})
	}
}

// runnerProcesses are the host's live runner processes.
func (h *host) runnerProcesses() []rm.RunnerProcess {
	procs, err := platform.RunnerProcesses("")
	require.NoError(h.f.t, err)
	var out []rm.RunnerProcess
	for _, p := range procs {
		if strings.HasPrefix(p.Exe, h.dataDir+string(filepath.Separator)) || strings.HasPrefix(p.Cwd, h.dataDir+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

// fleetHosts is the fleet as one host's `status --json` shows it.
type fleetHost struct {
	Name         string `json:"name"`
	Stale        bool   `json:"stale"`
	LiveAttempts int    `json:"live_attempts"`
}

func (h *host) fleetView() ([]fleetHost, error) {
	out, err := h.try("status", "--json")
	if err != nil {
		return nil, err
	}
	var st struct {
		Fleet struct {
			Hosts []fleetHost `json:"hosts"`
		} `json:"fleet"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("status --json: %w\n%s", err, out)
	}
	return st.Fleet.Hosts, nil
}

// waitFor polls cond until it holds, failing the test past d or when a
// daemon that should run exited.
func (f *fleet) waitFor(d time.Duration, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			f.dumpLogs()
			f.t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobsDone counts the fake's completed jobs, and those of label.
func (f *fleet) jobsDone(label string) (all, ofLabel int) {
	for _, j := range f.fake.Jobs() {
		if j.Status == "completed" {
			all++
			if len(j.Labels) > 0 && j.Labels[0] == label {
				ofLabel++
			}
		}
	}
	return all, ofLabel
}

// open opens the fleet's store from the test.
func (f *fleet) open() store.Store {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, f.url)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = st.Close() })
	return st
}

func (f *fleet) dumpLogs() {
	for _, h := range f.hosts {
		f.t.Logf("----- %s's log (last 60 lines):\n%s", h.name, h.logTail(60))
	}
}

// close stops every daemon, ends runner processes left behind and closes
// the fake; a failed test gets the hosts' logs.
func (f *fleet) close() {
	var errs []error
	for _, h := range f.hosts {
		errs = append(errs, h.stop(30*time.Second))
	}
	for _, h := range f.hosts {
		for _, p := range h.runnerProcesses() {
			_ = platform.StopRunnerProcess(p, time.Second)
		}
		_ = h.log.Close()
	}
	f.fake.Close()
	if err := errors.Join(errs...); err != nil {
		f.t.Errorf("stopping the fleet: %v", err)
	}
	if f.t.Failed() {
		f.dumpLogs()
	}
}

// policyHosts maps every policy of the store to its host's
// name.
func policyHosts(t testing.TB, st store.Store) map[rm.PolicyID]string {
	t.Helper()
	ctx := context.Background()
	hosts, err := st.Hosts(ctx)
	require.NoError(t, err)
	names := map[rm.HostID]string{}
	for _, h := range hosts {
		names[h.ID] = h.Name
	}
	ps, err := st.Policies(ctx)
	require.NoError(t, err)
	out := map[rm.PolicyID]string{}
	for _, p := range ps {
		out[p.ID] = names[p.Host]
	}
	return out
}

// addPolicy adds another scale-set policy to the host.
func (h *host) addPolicy(name, scaleSet string) {
	h.f.t.Helper()
	h.cli(append([]string{"policy", "add", name, "--repo", repo, "--max", "4", "--runner-dir", h.f.runner,
		"--memory-estimate", "64MiB", "--scale-set", scaleSet}, h.f.policyArgs...)...)
}
