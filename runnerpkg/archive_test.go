package runnerpkg_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// entry is one member of a test archive.
type entry struct {
	name string
	body string
	mode int64
	kind byte // tar type flag; 0 is a regular file
	link string
}

func tarball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		kind := e.kind
		if kind == 0 {
			kind = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: kind, Linkname: e.link}
		if kind == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(h))
		if kind == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func zipball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := fs.FileMode(e.mode)
		if e.kind == tar.TypeDir {
			mode |= fs.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// serve serves body (or status when non-zero) and counts requests.
func serve(t *testing.T, body []byte, status int) (string, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if status != 0 {
			http.Error(w, "boom", status)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/actions-runner.tar.gz", &hits
}

// leftovers lists what is in dir: after a refusal, nothing may be.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

var runnerEntries = []entry{
	{name: "./", kind: tar.TypeDir, mode: 0o755},
	{name: "./bin/", kind: tar.TypeDir, mode: 0o755},
	{name: "./bin/Runner.Listener", body: "#!/bin/sh\nexit 0\n", mode: 0o755},
	{name: "./bin/Runner.Worker.dll", body: "worker", mode: 0o644},
	{name: "./externals/node20/bin/node", body: "node", mode: 0o755},
	{name: "./externals/node20/lib/npm-cli.js", body: "npm", mode: 0o644},
	{name: "./externals/node20/bin/npm", kind: tar.TypeSymlink, link: "../lib/npm-cli.js"},
	{name: "./bin/Runner.Worker.copy", kind: tar.TypeLink, link: "./bin/Runner.Worker.dll"},
	{name: "./run.sh", body: "#!/bin/sh\n", mode: 0o755},
	{name: "./.env", body: "LANG=C\n", mode: 0o600},
}

func TestInstallRunner(t *testing.T) {
	archive := tarball(t, runnerEntries...)
	url, hits := serve(t, archive, 0)
	parent := t.TempDir()
	dest := filepath.Join(parent, "runners", "2.321.0")

	require.NoError(t, runnerpkg.InstallArchive(t.Context(), nil, url, sum(archive), dest, nil))
	assert.Equal(t, int32(1), hits.Load())
	assert.Equal(t, []string{"2.321.0"}, leftovers(t, filepath.Join(parent, "runners")), "no temp files left")

	for _, f := range []struct {
		name string
		body string
		mode fs.FileMode
	}{
		{"bin/Runner.Listener", "#!/bin/sh\nexit 0\n", 0o755},
		{"bin/Runner.Worker.dll", "worker", 0o644},
		{"externals/node20/bin/node", "node", 0o755},
		{"run.sh", "#!/bin/sh\n", 0o755},
		{".env", "LANG=C\n", 0o600},
	} {
		b, err := os.ReadFile(filepath.Join(dest, f.name))
		require.NoError(t, err, f.name)
		assert.Equal(t, f.body, string(b), f.name)
		info, err := os.Stat(filepath.Join(dest, f.name))
		require.NoError(t, err)
		if runtime.GOOS != "windows" {
			assert.Equal(t, f.mode, info.Mode().Perm(), "%s keeps its mode", f.name)
		}
	}
	target, err := os.Readlink(filepath.Join(dest, "externals/node20/bin/npm"))
	require.NoError(t, err)
	assert.Equal(t, filepath.FromSlash("../lib/npm-cli.js"), target)
	a, err := os.Stat(filepath.Join(dest, "bin/Runner.Worker.dll"))
	require.NoError(t, err)
	b, err := os.Stat(filepath.Join(dest, "bin/Runner.Worker.copy"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(a, b), "a hard link in the archive stays one")
	info, err := os.Stat(dest)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o755), info.Mode().Perm())

	got, err := runnerpkg.Newest(parent)
	require.NoError(t, err)
	assert.Equal(t, dest, got, "an installed runner is found")

	err = runnerpkg.InstallArchive(t.Context(), nil, url, sum(archive), dest, nil)
	require.ErrorIs(t, err, fs.ErrExist, "never over an installed runner")
	assert.Equal(t, int32(1), hits.Load(), "refused before downloading")
}

func TestInstallRunnerZip(t *testing.T) {
	archive := zipball(t,
		entry{name: "bin/", kind: tar.TypeDir, mode: 0o755},
		entry{name: "bin/Runner.Listener.exe", body: "MZ", mode: 0o755},
		entry{name: "config.cmd", body: "@echo off", mode: 0o644},
	)
	url, _ := serve(t, archive, 0)
	dest := filepath.Join(t.TempDir(), "2.321.0")
	require.NoError(t, runnerpkg.InstallArchive(t.Context(), http.DefaultClient, url, sum(archive), dest, nil))
	b, err := os.ReadFile(filepath.Join(dest, "bin", "Runner.Listener.exe"))
	require.NoError(t, err)
	assert.Equal(t, "MZ", string(b))
	if runtime.GOOS != "windows" {
		info, err := os.Stat(filepath.Join(dest, "bin", "Runner.Listener.exe"))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o755), info.Mode().Perm())
	}
}

func TestInstallRunnerRefused(t *testing.T) {
	good := tarball(t, runnerEntries...)
	tests := []struct {
		name    string
		archive []byte
		sha     string // "" means the archive's own
		status  int
		want    string
	}{
		{name: "Checksum", archive: good, sha: sum([]byte("another")), want: "checksum mismatch"},
		{name: "Server500", status: http.StatusInternalServerError, sha: sum(good), want: "500"},
		{name: "NotFound", status: http.StatusNotFound, sha: sum(good), want: "404"},
		{name: "NotAnArchive", archive: []byte("<html>hello</html>"), want: "neither"},
		{name: "Empty", archive: []byte{}, want: "the runner package downloaded from http"},
		{name: "EmptyWrongSum", archive: []byte{}, sha: sum(good), want: "is empty"},
		{name: "TooShort", archive: []byte("PK"), want: "archive of 2 bytes is too short to be a .tar.gz or a .zip"},
		{name: "DotDot", archive: tarball(t,
			entry{name: "bin/ok", body: "ok", mode: 0o644},
			entry{name: "../evil", body: "pwned", mode: 0o644}), want: "outside"},
		{name: "DeepDotDot", archive: tarball(t,
			entry{name: "bin/../../evil", body: "pwned", mode: 0o644}), want: "outside"},
		{name: "Absolute", archive: tarball(t,
			entry{name: "/tmp/evil", body: "pwned", mode: 0o644}), want: "outside"},
		{name: "LinkOut", archive: tarball(t,
			entry{name: "out", kind: tar.TypeSymlink, link: "../.."}), want: "outside"},
		{name: "LinkAbsolute", archive: tarball(t,
			entry{name: "etc", kind: tar.TypeSymlink, link: "/etc"}), want: "outside"},
		{name: "ClimbThroughLink", archive: tarball(t,
			entry{name: "d", kind: tar.TypeSymlink, link: "."},
			entry{name: "up", kind: tar.TypeSymlink, link: "d/.."}), want: "outside"},
		{name: "WriteThroughLink", archive: tarball(t,
			entry{name: "d", kind: tar.TypeSymlink, link: "."},
			entry{name: "d/up", kind: tar.TypeSymlink, link: ".."},
			entry{name: "d/up/evil", body: "pwned", mode: 0o644}), want: "outside"},
		{name: "HardLinkOut", archive: tarball(t,
			entry{name: "passwd", kind: tar.TypeLink, link: "../../etc/passwd"}), want: "outside"},
		{name: "ZipDotDot", archive: zipball(t,
			entry{name: "../evil", body: "pwned", mode: 0o644}), want: "outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := serve(t, tt.archive, tt.status)
			sha := tt.sha
			if sha == "" {
				sha = sum(tt.archive)
			}
			top := t.TempDir()
			parent := filepath.Join(top, "data", "runners")
			dest := filepath.Join(parent, "2.321.0")
			err := runnerpkg.InstallArchive(t.Context(), nil, url, sha, dest, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "EOF")
			assert.Empty(t, leftovers(t, parent), "nothing left behind")
			assert.Equal(t, []string{"runners"}, leftovers(t, filepath.Join(top, "data")), "nothing written outside")
			assert.Equal(t, []string{"data"}, leftovers(t, top), "nothing written outside")
		})
	}
}

func TestInstallRunnerBadInput(t *testing.T) {
	archive := tarball(t, runnerEntries...)
	url, hits := serve(t, archive, 0)
	dest := filepath.Join(t.TempDir(), "2.321.0")

	err := runnerpkg.InstallArchive(t.Context(), nil, url, "not-a-sha", dest, nil)
	require.ErrorContains(t, err, "not a SHA-256")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = runnerpkg.InstallArchive(ctx, nil, url, sum(archive), dest, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(0), hits.Load())
	assert.NoDirExists(t, dest)
}

func TestNewest(t *testing.T) {
	data := t.TempDir()
	dir := datadir.New(data).Runners()
	for _, v := range []string{"2.9.0", "2.10.0", "2.321.0", "junk"} {
		listener := runnerpkg.ListenerPath(filepath.Join(dir, v))
		require.NoError(t, os.MkdirAll(filepath.Dir(listener), 0o755))
		require.NoError(t, os.WriteFile(listener, []byte("#!/bin/sh\n"), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "3.0.0"), 0o755)) // no bin/: not installed
	got, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "2.321.0"), got)

	_, err = runnerpkg.Newest(filepath.Join(data, "none"))
	require.ErrorContains(t, err, "runner-manager runner install")
}
