package app_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/release"
)

// publish serves a release of version over loopback whose programs hold
// cli and tui, laid out as GitHub's releases; tamper flips a byte of the
// archive after its checksum is taken.
func publish(t *testing.T, version, cli, tui string, tamper bool) *httptest.Server {
	t.Helper()
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	src := t.TempDir()
	var paths []string
	for prog, body := range map[string]string{"runner-manager": cli, "runner-manager-tui": tui} {
		path := filepath.Join(src, p.Exe(prog))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
		paths = append(paths, path)
	}
	var b bytes.Buffer
	require.NoError(t, release.Pack(&b, p, paths, time.Unix(0, 0)))
	name := release.ArchiveName(version, p)
	sums := release.Sums{name: release.Sum(b.Bytes())}.Bytes()
	archive := b.Bytes()
	if tamper {
		archive[len(archive)/2] ^= 0xff
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		file := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		dir := strings.TrimSuffix(r.URL.Path, "/"+file)
		if dir != "/latest/download" && dir != "/download/"+version {
			http.NotFound(w, r)
			return
		}
		switch file {
		case release.SumsName:
			_, _ = w.Write(sums)
		case name:
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// installed is a copy of the programs in a directory of their own, as
// update finds them (the CLI is "this program").
func installed(t *testing.T) (cli, tui string) {
	t.Helper()
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dir := t.TempDir()
	cli, tui = filepath.Join(dir, p.Exe("runner-manager")), filepath.Join(dir, p.Exe("runner-manager-tui"))
	require.NoError(t, os.WriteFile(cli, []byte("old cli"), 0o755))
	require.NoError(t, os.WriteFile(tui, []byte("old tui"), 0o755))
	return cli, tui
}

func requireContent(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got), path)
}

// TestUpdate: update replaces this program and the TUI beside it with a
// verified release's; a tampered archive, a release without this
// platform, and --check replace nothing and leave no file behind.
func TestUpdate(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e, cli, tui := newEnv(t), "", ""
		cli, tui = installed(t)
		defer app.SetExecutable(cli)()
		srv := publish(t, "v1.2.3", "new cli", "new tui", false)
		out := e.ok("update", "--base-url", srv.URL)
		require.Contains(t, out, cli+": dev → v1.2.3")
		require.Contains(t, out, "no daemon runs on this data directory")
		requireContent(t, cli, "new cli")
		requireContent(t, tui, "new tui")
		entries, err := os.ReadDir(filepath.Dir(cli))
		require.NoError(t, err)
		require.Len(t, entries, 2, "no temporary file is left")
	})
	t.Run("Pinned", func(t *testing.T) {
		e := newEnv(t)
		cli, _ := installed(t)
		defer app.SetExecutable(cli)()
		srv := publish(t, "v1.2.3", "new cli", "new tui", false)
		e.ok("update", "--base-url", srv.URL, "--to", "1.2.3")
		requireContent(t, cli, "new cli")
		msg := e.fails(app.ExitFailure, "update", "--base-url", srv.URL, "--to", "1.2.4")
		require.Contains(t, msg, "nothing updated")
	})
	t.Run("Check", func(t *testing.T) {
		e := newEnv(t)
		cli, _ := installed(t)
		defer app.SetExecutable(cli)()
		srv := publish(t, "v1.2.3", "new cli", "new tui", false)
		out := e.ok("update", "--base-url", srv.URL, "--check")
		require.Contains(t, out, "runner-manager v1.2.3 is available (this is dev)")
		requireContent(t, cli, "old cli")
	})
	t.Run("Tampered", func(t *testing.T) {
		e, cli, tui := newEnv(t), "", ""
		cli, tui = installed(t)
		defer app.SetExecutable(cli)()
		srv := publish(t, "v1.2.3", "new cli", "new tui", true)
		msg := e.fails(app.ExitFailure, "update", "--base-url", srv.URL)
		require.Contains(t, msg, "nothing updated")
		require.Contains(t, msg, "checksum mismatch")
		requireContent(t, cli, "old cli")
		requireContent(t, tui, "old tui")
		entries, err := os.ReadDir(filepath.Dir(cli))
		require.NoError(t, err)
		require.Len(t, entries, 2)
	})
}
