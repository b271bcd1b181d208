package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/release"
)

// updateDrive runs `runner-manager update` against a release of the
// program served over loopback while four runners are busy and more jobs
// wait: the programs are replaced, the daemon restarts in place on the new
// one (same pid, no drain) and re-adopts the busy runners. The run's
// checks then say whether a job was lost.
func updateDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		w.Enqueue(4, d)
		if err := w.waitProgress(ctx, w.stall, 2*time.Minute, func(c jobCounts) bool { return c.running >= 4 }); err != nil {
			return fmt.Errorf("waiting for 4 busy runners: %w", err)
		}
		w.Enqueue(8, 2*time.Second)
		srv, err := w.publish()
		if err != nil {
			return err
		}
		defer srv.Close()
		pid := w.DaemonPID()
		before, err := os.Stat(w.bin)
		if err != nil {
			return err
		}
		out, err := w.CLI(ctx, "update", "--base-url", srv.URL, "--force")
		if err != nil {
			return err
		}
		w.logf("update: %s", strings.ReplaceAll(strings.TrimSpace(out), "\n", "; "))
		after, err := os.Stat(w.bin)
		if err != nil {
			return err
		}
		if os.SameFile(before, after) {
			return fmt.Errorf("update left %s in place", w.bin)
		}
		if !w.DaemonAlive() || w.DaemonPID() != pid {
			return fmt.Errorf("the daemon (pid %d) did not live on through the update", pid)
		}
		w.markFaultEnd()
		return nil
	}
}

// publish serves the world's program as a release of Version, laid out
// as GitHub's releases are.
func (w *World) publish() (*httptest.Server, error) {
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dir, err := os.MkdirTemp(w.Home, "release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var paths []string
	for _, prog := range release.Programs {
		path := filepath.Join(dir, p.Exe(prog))
		if err := os.Link(w.bin, path); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	var b bytes.Buffer
	if err := release.Pack(&b, p, paths, time.Now()); err != nil {
		return nil, err
	}
	name := release.ArchiveName(Version, p)
	files := map[string][]byte{name: b.Bytes(), release.SumsName: release.Sums{name: release.Sum(b.Bytes())}.Bytes()}
	return httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		file := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
		if data, ok := files[file]; ok {
			_, _ = rw.Write(data)
			return
		}
		http.NotFound(rw, req)
	})), nil
}
