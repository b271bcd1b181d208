package vm_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestMain(m *testing.M) {
	code := m.Run()
	vmtest.RemoveImages()
	fakegithub.RemoveRunnerBuild()
	os.Exit(code)
}

// fakeJob serves one job from a fake GitHub and returns the server, the
// job and a JIT configuration for a runner to take it.
func fakeJob(t *testing.T, spec fakegithub.JobSpec) (*fakegithub.Server, int64, string) {
	t.Helper()
	s := newFake(t)
	id, jit := enqueue(t, s, spec)
	return s, id, jit
}

func newFake(t *testing.T) *fakegithub.Server {
	s := fakegithub.NewServer(fakegithub.WithToken("ghp_vm"), fakegithub.WithRepo("octo-org/app"), fakegithub.WithPollTimeout(time.Second))
	t.Cleanup(s.Close)
	return s
}

// enqueue queues a job on s and returns it with a JIT configuration for a
// runner to take it.
func enqueue(t *testing.T, s *fakegithub.Server, spec fakegithub.JobSpec) (int64, string) {
	t.Helper()
	spec.Repo = "octo-org/app"
	spec.Labels = []string{"self-hosted", "linux"}
	id := s.EnqueueJob(spec)
	c, err := gh.NewClient(gh.WithHTTPClient(s.Client()), gh.WithAuthToken("ghp_vm"), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	require.NoError(t, err)
	jit, _, err := c.Actions.GenerateRepoJITConfig(context.Background(), "octo-org", "app", &gh.GenerateJITConfigRequest{
		Name: "rm-vm-" + strings.ToLower(t.Name()), RunnerGroupID: 1, Labels: []string{"self-hosted", "linux", "x64"},
	})
	require.NoError(t, err)
	return id, jit.GetEncodedJITConfig()
}

// hostPort is the fake GitHub's address, the one service the guest may
// reach.
func hostPort(t *testing.T, s *fakegithub.Server) string {
	t.Helper()
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	return u.Host
}

func newLauncher(t *testing.T, forward ...string) *vm.Launcher {
	t.Helper()
	im := vmtest.FakeRunnerImage(t)
	l, err := vm.NewLauncher(t.TempDir(), vm.Settings{
		Image: im.Dir, MemoryMiB: 256, CPUs: 1, Accel: vm.AccelTCG, Forward: forward,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

// canContain reports whether this process may make cgroups (root, or a
// delegated subtree), as the launcher finds out.
func canContain(t *testing.T) bool {
	c, err := platform.OpenCgroups("vmtest-probe")
	if err != nil {
		t.Logf("no cgroups here: %v", err)
		return false
	}
	_ = c.Close()
	return true
}

func waitDone(t *testing.T, p rm.Process, within time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(within):
		_ = p.Stop(context.Background(), time.Second)
		t.Fatalf("the VM did not end within %s", within)
	}
}

// One fake runner in a VM takes one job from the fake GitHub on the
// host's loopback and exits 0; its JIT configuration is in neither QEMU's
// command line nor its environment, nor on disk; the job reaches no other
// service of the host's loopback, through the guest's own loopback or
// QEMU's gateway.
func TestLaunchRunsOneJob(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "reached") }))
	t.Cleanup(other.Close)
	port := other.Listener.Addr().(*net.TCPAddr).Port
	s := newFake(t)
	_, ghPort, err := net.SplitHostPort(hostPort(t, s))
	require.NoError(t, err)
	// Each connection to a forwarded service is its own, however many
	// are open at once.
	script := fmt.Sprintf(`echo "policy-var=$POLICY_VAR"
for a in 10.0.2.2 127.0.0.1; do
  if echo | busybox nc -w 2 $a %d >/dev/null 2>&1; then echo "probe $a reached"; else echo "probe $a blocked"; fi
done
for i in 1 2 3 4; do
  (printf 'GET /rate_limit HTTP/1.0\r\n\r\n' | busybox nc 127.0.0.1 %s | busybox head -1 | busybox sed 's/^/concurrent /') &
done
wait`, port, ghPort)
	job, jit := enqueue(t, s, fakegithub.JobSpec{Duration: 200 * time.Millisecond, Script: script})
	require.Equal(t, []string{hostPort(t, s)}, slices.Compact(vm.RunnerServices(jit)), "the fake GitHub serves all")
	l := newLauncher(t) // the runner's services are forwarded unasked
	a := rm.NewAttemptID()
	p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit, Env: []string{"POLICY_VAR=it's set"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Cleanup(a, false) })

	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID()), f))
		require.NoError(t, err)
		require.NotContains(t, string(b), jit, "the JIT configuration is in QEMU's %s", f)
	}
	ents, err := os.ReadDir(l.Dir(a))
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(l.Dir(a), e.Name()))
		require.NoError(t, err)
		require.NotContains(t, string(b), jit, "the JIT configuration is in %s", e.Name())
	}

	waitDone(t, p, 90*time.Second)
	c, err := p.(*vm.Process).Console()
	require.NoError(t, err)
	console, err := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
	require.NoError(t, err)
	if p.ExitCode() != 0 {
		t.Logf("console:\n%s", console)
	}
	require.Equal(t, 0, p.ExitCode(), "console: %+v", c)
	require.True(t, l.RanJob(a))
	rec, ok := s.Job(job)
	require.True(t, ok)
	require.Equal(t, "completed", rec.Status)
	require.Equal(t, "succeeded", rec.Result)
	t.Logf("boot phases: %+v", c.Phases)
	require.Contains(t, string(console), "policy-var=it's set")
	require.Contains(t, string(console), "probe 10.0.2.2 blocked")
	require.Contains(t, string(console), "probe 127.0.0.1 blocked")
	require.Equal(t, 4, strings.Count(string(console), "concurrent HTTP/1."), "four connections at once to the fake GitHub")

	require.NoError(t, l.Cleanup(a, false))
	_, err = os.Stat(l.Dir(a))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A policy's forward opens a service of the host's loopback to its own
// guest, which reaches it at the same address, while a service it does
// not name stays out of reach.
func TestLaunchPolicyForward(t *testing.T) {
	serve := func(body string) int {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().(*net.TCPAddr).Port
	}
	opened, closed := serve("cache-hit"), serve("secret")
	s := newFake(t)
	script := fmt.Sprintf(`for p in %d %d; do
  printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 5 127.0.0.1 $p | busybox tail -1 | busybox sed "s/^/port $p: /"
done`, opened, closed)
	_, jit := enqueue(t, s, fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: script})
	l := newLauncher(t)
	a := rm.NewAttemptID()
	pol := rm.Policy{Name: "cached", Backend: rm.BackendVM, VM: rm.VMSettings{Forward: []string{fmt.Sprintf("127.0.0.1:%d", opened)}}}
	p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit, Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Cleanup(a, false) })
	waitDone(t, p, 90*time.Second)
	console, err := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
	require.NoError(t, err)
	require.Equal(t, 0, p.ExitCode(), "console:\n%s", console)
	require.Contains(t, string(console), fmt.Sprintf("port %d: cache-hit", opened))
	require.NotContains(t, string(console), "secret")
}

// A restarted launcher refuses to adopt, as the runner of an attempt,
// a QEMU of another attempt's directory; an adopted VM powered off from
// the host has no exit code; a failed attempt keeps its logs. The
// launcher suite (TestConformance) checks the rest of a restart.
func TestAdoptAfterRestartAndStop(t *testing.T) {
	s, _, jit := fakeJob(t, fakegithub.JobSpec{Duration: time.Hour})
	im := vmtest.FakeRunnerImage(t)
	data := t.TempDir()
	settings := vm.Settings{Image: im.Dir, MemoryMiB: 256, CPUs: 1, Accel: vm.AccelTCG, Forward: []string{hostPort(t, s)}}
	first, err := vm.NewLauncher(data, settings)
	require.NoError(t, err)
	a := rm.NewAttemptID()
	p, err := first.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background(), time.Second) })
	// Its runner took the job: the guest has written to its console, which
	// a failed attempt keeps.
	busy, cancelBusy := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancelBusy()
	require.NoError(t, s.WaitFor(busy, func() bool {
		rs := s.Runners()
		return len(rs) == 1 && rs[0].Busy
	}), "the runner in the VM takes its job")

	restarted, err := vm.NewLauncher(data, settings)
	require.NoError(t, err)
	_, err = restarted.Adopt(rm.NewAttemptID(), p.PID(), p.Start())
	require.ErrorIs(t, err, rm.ErrProcessGone, "another attempt's pid")
	adopted, err := restarted.Adopt(a, p.PID(), p.Start())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, adopted.Stop(ctx, 5*time.Second))
	waitDone(t, adopted, 10*time.Second)
	waitDone(t, p, 10*time.Second)
	require.Equal(t, -1, adopted.ExitCode(), "a VM powered off from the host reports no exit code")

	require.NoError(t, restarted.Cleanup(a, true))
	kept, err := os.ReadDir(filepath.Join(data, "vm", ".failed", a.String()))
	require.NoError(t, err)
	require.Len(t, kept, 2, "a failed attempt keeps its console and QEMU logs")
}

// A job over its policy's memory limit meets the guest's OOM killer, not
// the host's: the VM is the limit's size, and the launcher reports the
// kill, which concludes the attempt Failed(OOMKilled).
func TestMemoryLimitIsTheGuestsSize(t *testing.T) {
	s, _, jit := fakeJob(t, fakegithub.JobSpec{Duration: 3 * time.Second, MemoryBytes: 220 << 20})
	l := newLauncher(t, hostPort(t, s))
	a := rm.NewAttemptID()
	require.NoError(t, l.SetMemoryLimit(a, 256<<20))
	p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Cleanup(a, false) })
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID()), "cmdline"))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(b), "\x00"), "256", "QEMU's -m is the limit")
	if cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID()), "cgroup")); err == nil && canContain(t) {
		require.Contains(t, string(cg), "-vm/"+a.String(), "QEMU runs in the attempt's cgroup")
	}

	waitDone(t, p, 90*time.Second)
	m, ok := l.GroupMemory(a)
	require.True(t, ok)
	if m.OOMKills == 0 {
		console, _ := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
		t.Logf("console:\n%s", console)
	}
	require.NotZero(t, m.OOMKills)
	require.Equal(t, uint64(256<<20), m.LimitBytes)
	require.NotEqual(t, 0, p.ExitCode(), "the runner was killed")
}

// Roots lists the attempts' directories alone: kept logs (.failed), the
// overlays' templates and names of no attempt are not listed. (The
// launcher suite's Restart sweeps the directory of an orphan VM.)
func TestRootsListAttemptsOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the VM launcher runs on Linux only")
	}
	data := t.TempDir()
	a := rm.NewAttemptID()
	for _, dir := range []string{".failed", ".overlays", "not-an-attempt", a.String()} {
		require.NoError(t, os.MkdirAll(filepath.Join(data, "vm", dir), 0o700))
	}
	l, err := vm.NewLauncher(data, vm.Settings{})
	require.NoError(t, err)
	roots, err := l.Roots()
	require.NoError(t, err)
	require.Equal(t, []rm.AttemptID{a}, roots)
}
