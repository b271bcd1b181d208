package vm_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/platform/vm"
	"github.com/runner-manager/runner-manager/platform/vm/vmtest"
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
	s := fakegithub.NewServer(fakegithub.WithToken("ghp_vm"), fakegithub.WithRepo("octo-org/app"), fakegithub.WithPollTimeout(time.Second))
	t.Cleanup(s.Close)
	spec.Repo = "octo-org/app"
	spec.Labels = []string{"self-hosted", "linux"}
	id := s.EnqueueJob(spec)
	c, err := gh.NewClient(gh.WithHTTPClient(s.Client()), gh.WithAuthToken("ghp_vm"), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	require.NoError(t, err)
	jit, _, err := c.Actions.GenerateRepoJITConfig(context.Background(), "octo-org", "app", &gh.GenerateJITConfigRequest{
		Name: "rm-vm-" + strings.ToLower(t.Name()), RunnerGroupID: 1, Labels: []string{"self-hosted", "linux", "x64"},
	})
	require.NoError(t, err)
	return s, id, jit.GetEncodedJITConfig()
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
	return l
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
// command line nor its environment, nor on disk.
func TestLaunchRunsOneJob(t *testing.T) {
	s, job, jit := fakeJob(t, fakegithub.JobSpec{Duration: 200 * time.Millisecond})
	l := newLauncher(t, hostPort(t, s))
	a := rm.NewAttemptID()
	p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit, Env: []string{"POLICY_VAR=it's set"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Cleanup(a, false) })

	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(filepath.Join("/proc", itoa(p.PID()), f))
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
	if p.ExitCode() != 0 {
		b, _ := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
		t.Logf("console:\n%s", b)
	}
	require.Equal(t, 0, p.ExitCode(), "console: %+v", c)
	require.True(t, l.RanJob(a))
	rec, ok := s.Job(job)
	require.True(t, ok)
	require.Equal(t, "completed", rec.Status)
	require.Equal(t, "succeeded", rec.Result)
	t.Logf("boot phases: %+v", c.Phases)

	require.NoError(t, l.Cleanup(a, false))
	_, err = os.Stat(l.Dir(a))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func itoa(n int) string { return strconv.Itoa(n) }
