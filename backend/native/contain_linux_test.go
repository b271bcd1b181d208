//go:build linux

package native_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/platform"
)

// allocEnv makes this test binary a process that allocates and touches
// the bytes it names, says so in $OUT/<name>.ready, and sleeps until
// killed (TestAllocatingHelper).
const allocEnv = "PLATFORM_TEST_ALLOCATE"

// TestAllocatingHelper is the allocating process of the tests below, run
// as a job's process; it is skipped in a normal run.
func TestAllocatingHelper(t *testing.T) {
	n, err := strconv.ParseUint(os.Getenv(allocEnv), 10, 64)
	if err != nil {
		t.Skip("the allocating job process of the containment tests")
	}
	mem := make([]byte, n)
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	ready := filepath.Join(os.Getenv("OUT"), os.Getenv("NAME")+".ready")
	if err := os.WriteFile(ready, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour)
	runtime.KeepAlive(mem)
}

// allocListener is a runner whose job starts the test binary, allocating
// $BYTES, in a session of its own and forked away from the runner
// (setsid -f), then waits for $OUT/stop.
const allocListener = `#!/bin/sh
PLATFORM_TEST_ALLOCATE="$BYTES" NAME=alloc setsid -f "$HELPER" -test.run='^TestAllocatingHelper$' >/dev/null 2>&1
while [ ! -e "$OUT/stop" ]; do sleep 0.05; done
exit 0
`

// scriptRunner installs a runner whose listener is script.
func scriptRunner(t *testing.T, script string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runner")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "Runner.Listener"), []byte(script), 0o755))
	return dir
}

// logBuffer is a slog destination safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// containedLauncher returns a launcher with cgroups when cgroup is set
// and the host allows them (else the test is skipped, saying why), or
// one forced to the fallback.
func containedLauncher(t *testing.T, data string, cgroup bool, logs *logBuffer) *native.Launcher {
	t.Helper()
	opts := []native.Option{native.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		native.WithLeftoverGrace(2 * time.Second)}
	if !cgroup {
		opts = append(opts, native.WithoutCgroups())
	}
	l := native.NewLauncher(data, opts...)
	t.Cleanup(func() { _ = l.Close() })
	if cgroup {
		if in := l.CgroupsInUse(); in == "" {
			t.Skipf("no cgroup can be made here (not root, nothing delegated): the fallback alone is tested; launcher said: %s", logs)
		} else {
			t.Logf("cgroups: %s", in)
		}
	} else {
		t.Log("forced to the fallback: process group and environment marker")
	}
	return l
}

// pidIn reads a pid file and names the process for good.
func pidIn(t *testing.T, path string) (int, uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	start, err := platform.StartTime(pid)
	require.NoError(t, err, "process %d of %s is alive", pid, filepath.Base(path))
	return pid, start
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	// Written, not just created: the writer creates the file, then writes
	// its one line.
	require.Eventually(t, func() bool { fi, err := os.Stat(path); return err == nil && fi.Size() > 0 }, within, 10*time.Millisecond, "%s never appeared", path)
}

func TestContainMemoryOfALeavingChild(t *testing.T) {
	const alloc = 200 << 20
	for _, cgroup := range []bool{true, false} {
		name := map[bool]string{true: "Cgroup", false: "Fallback"}[cgroup]
		t.Run(name, func(t *testing.T) {
			var logs logBuffer
			data, out := t.TempDir(), t.TempDir()
			l := containedLauncher(t, data, cgroup, &logs)
			id := rm.NewAttemptID()
			p, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: id, RunnerDir: scriptRunner(t, allocListener),
				JITConfig: "jit", Env: []string{"OUT=" + out, "HELPER=" + os.Args[0], fmt.Sprintf("BYTES=%d", alloc)}})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = os.WriteFile(filepath.Join(out, "stop"), nil, 0o644)
				<-p.Done()
				_ = l.Cleanup(id, false)
			})
			waitFile(t, filepath.Join(out, "alloc.ready"), 30*time.Second)
			child, _ := pidIn(t, filepath.Join(out, "alloc.ready"))

			tree := platform.SampleTrees([]int{p.PID()})[p.PID()]
			assert.Less(t, tree.RSSBytes, uint64(alloc), "the runner's process tree does not hold the child that left it")
			u, ok := l.GroupUsage(id)
			if !cgroup {
				assert.False(t, ok, "no cgroup in the fallback")
				t.Logf("fallback: the tree walk sees %d MiB; the child (pid %d) that left the tree holds 200 MiB it does not see", tree.RSSBytes>>20, child)
				return
			}
			require.True(t, ok)
			g, ok := l.Cgroups().Find(id)
			require.True(t, ok)
			n, err := g.Processes()
			require.NoError(t, err)
			t.Logf("cgroup: %d MiB in %d processes; the tree walk: %d MiB", u.MemoryBytes>>20, n, tree.RSSBytes>>20)
			assert.GreaterOrEqual(t, u.MemoryBytes, uint64(alloc), "the group holds the child's 200 MiB")
			assert.Less(t, u.MemoryBytes, uint64(1<<30), "the group's own memory, not the host's (a race build's child doubles its 200 MiB)")
			assert.GreaterOrEqual(t, n, 2, "the runner and the child")
			assert.Positive(t, u.CPUTime)
		})
	}
}
