package fakegithub_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

const (
	token = "ghp_test_token_0123456789"
	repo  = "octo-org/app"
)

// newServer is a test server with one repository and one accepted token.
func newServer(t *testing.T, opts ...fakegithub.Option) *fakegithub.Server {
	t.Helper()
	return githubtest.NewTestServer(t, append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(repo)}, opts...)...)
}

// restClient is go-github v88 pointed at the fake.
func restClient(t testing.TB, s *fakegithub.Server, tok string) *gh.Client {
	t.Helper()
	c, err := gh.NewClient(gh.WithHTTPClient(s.Client()), gh.WithAuthToken(tok), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	require.NoError(t, err)
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// runnerRoot makes a runner root of its own, as the launcher does: a real
// bin/ of hard links to the installed runner, externals/ a symlink.
func runnerRoot(t *testing.T, install string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "bin"), 0o755))
	name := fakegithub.ListenerName()
	require.NoError(t, os.Link(filepath.Join(install, "bin", name), filepath.Join(root, "bin", name)))
	require.NoError(t, os.Symlink(filepath.Join(install, "externals"), filepath.Join(root, "externals")))
	return root
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a fake runner process.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startRunner starts bin/Runner.Listener run in root with the JIT config in
// its environment.
func startRunner(t *testing.T, root, jit string, env ...string) *proc {
	t.Helper()
	return startProc(t, root, append([]string{"ACTIONS_RUNNER_INPUT_JITCONFIG=" + jit}, env...), "run")
}

// startProc starts root's bin/Runner.Listener with args and env added.
func startProc(t *testing.T, root string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "bin", fakegithub.ListenerName()), args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exitCode waits for the process to exit and returns its code.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("runner still running after %s; output:\n%s", within, p.out.String())
		return -1
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
