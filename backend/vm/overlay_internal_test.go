package vm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Launches at once share one template overlay, made once; a base rebuilt
// in place gets a new one.
func TestOverlaysAtOnce(t *testing.T) {
	qemuImg, err := exec.LookPath("qemu-img")
	if err != nil {
		t.Skip("no qemu-img")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.raw")
	require.NoError(t, os.WriteFile(base, make([]byte, 1<<20), 0o444))
	o := overlays{dir: filepath.Join(dir, "templates")}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			errs[i] = o.create(context.Background(), qemuImg, base, filepath.Join(dir, "disk"+string(rune('a'+i))))
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	first := o.templates[base]
	out, err := exec.Command(qemuImg, "info", filepath.Join(dir, "diska")).CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(out), "backing file: "+base)

	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(base, later, later))
	require.NoError(t, o.create(context.Background(), qemuImg, base, filepath.Join(dir, "diske")))
	require.False(t, o.templates[base].mtime.Equal(first.mtime), "a rebuilt base gets a new template")
}
