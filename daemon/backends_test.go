package daemon_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/daemon"
)

// recording is a native launcher that counts what it is asked.
type recording struct {
	*native.Launcher
	mu    sync.Mutex
	calls map[string]int
}

func newRecording(dataDir string) *recording {
	return &recording{Launcher: native.NewLauncher(dataDir), calls: map[string]int{}}
}

func (r *recording) count(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[what]++
}

func (r *recording) get(what string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[what]
}

func (r *recording) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

func (r *recording) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	r.count("launch")
	return r.Launcher.Launch(ctx, spec)
}

func (r *recording) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	r.count("adopt")
	return r.Launcher.Adopt(a, pid, start)
}

func (r *recording) Cleanup(a rm.AttemptID, failed bool) error {
	r.count("cleanup")
	return r.Launcher.Cleanup(a, failed)
}

func (r *recording) RanJob(a rm.AttemptID) bool {
	r.count("ranjob")
	return r.Launcher.RanJob(a)
}

func (r *recording) Roots() ([]rm.AttemptID, error) {
	r.count("roots")
	return r.Launcher.Roots()
}

// With launchers of two backends, each attempt goes to its policy's: the
// native policy's runners are the native launcher's alone, with their job
// evidence and root listing passed through.
func TestRunRoutesAttemptsByBackend(t *testing.T) {
	w := newWorld(t)
	native, other := newRecording(w.dataDir), newRecording(filepath.Join(t.TempDir(), "other"))
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(),
		Launchers: map[rm.Backend]rm.Launcher{"": native, "container": other}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", false)
	stop := start(t, d)
	w.serve(t, 2, "home", false)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())

	assert.Equal(t, 2, native.get("launch"))
	assert.Equal(t, 2, native.get("cleanup"))
	assert.Equal(t, 2, native.get("ranjob"), "the pass asked the native launcher whether each runner ran its job")
	assert.Positive(t, native.get("roots"), "the supervisor's sweep listed the native roots")
	assert.Zero(t, other.total()-other.get("roots"), "the other backend launched, adopted and cleaned nothing")
}
