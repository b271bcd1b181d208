package release_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/release"
)

// testVersion is the version the test release carries.
const testVersion = "v1.2.3"

// here is the platform the tests run on.
var here = release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}

var (
	cliOnce sync.Once
	cliDir  string
	cliErr  error
)

// builtCLI builds the real runner-manager once per test binary, with
// version stamped in as the release build does, and a stand-in TUI (a
// copy: the test runs only the CLI); it returns their paths.
func builtCLI(t *testing.T) []string {
	t.Helper()
	cliOnce.Do(func() {
		cliDir, cliErr = os.MkdirTemp("", "release-test-")
		if cliErr != nil {
			return
		}
		cli := filepath.Join(cliDir, here.Exe("runner-manager"))
		cmd := exec.Command("go", "build", "-ldflags", "-s -w -X github.com/runner-manager/runner-manager.stampedVersion="+testVersion,
			"-o", cli, "github.com/runner-manager/runner-manager/frontends/cli/cmd/runner-manager")
		var out []byte
		if out, cliErr = cmd.CombinedOutput(); cliErr != nil {
			cliErr = &buildError{cliErr, string(out)}
			return
		}
		cliErr = os.Link(cli, filepath.Join(cliDir, here.Exe("runner-manager-tui")))
	})
	require.NoError(t, cliErr)
	return []string{filepath.Join(cliDir, here.Exe("runner-manager")), filepath.Join(cliDir, here.Exe("runner-manager-tui"))}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if cliDir != "" {
		os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

// files is a published release: its files by name.
type files map[string][]byte

// releaseOf packs paths as version's archive for p, with its SHA256SUMS.
func releaseOf(t *testing.T, version string, p release.Platform, paths []string) files {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, release.Pack(&b, p, paths, time.Unix(0, 0)))
	name := release.ArchiveName(version, p)
	return files{name: b.Bytes(), release.SumsName: release.Sums{name: release.Sum(b.Bytes())}.Bytes()}
}

// serve publishes rel as the newest release and as release tag, laid out
// as GitHub's releases are, over loopback.
func serve(t *testing.T, tag string, rel files) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, dir := range []string{"/latest/download/", "/download/" + tag + "/"} {
			if name, ok := strings.CutPrefix(r.URL.Path, dir); ok {
				if data, ok := rel[name]; ok {
					_, _ = w.Write(data)
					return
				}
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSums(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		p        release.Platform
		archive  string
		tag      string
		err      string
	}{
		{name: "OK", in: good + "  runner-manager_1.2.3_linux_amd64.tar.gz\n" + good + "  runner-manager_1.2.3_windows_amd64.zip\n",
			p: release.Platform{OS: "linux", Arch: "amd64"}, archive: "runner-manager_1.2.3_linux_amd64.tar.gz", tag: "v1.2.3"},
		{name: "BinaryMode", in: good + " *runner-manager_2.0.0-rc.1_windows_amd64.zip\n",
			p: release.Platform{OS: "windows", Arch: "amd64"}, archive: "runner-manager_2.0.0-rc.1_windows_amd64.zip", tag: "v2.0.0-rc.1"},
		{name: "NoArchive", in: good + "  runner-manager_1.2.3_linux_amd64.tar.gz\n",
			p: release.Platform{OS: "linux", Arch: "arm64"}, err: "no archive for linux/arm64"},
		{name: "WrongExtension", in: good + "  runner-manager_1.2.3_windows_amd64.tar.gz\n",
			p: release.Platform{OS: "windows", Arch: "amd64"}, err: "no archive for windows/amd64"},
		{name: "TwoVersions", in: good + "  runner-manager_1.2.3_linux_amd64.tar.gz\n" + good + "  runner-manager_1.2.4_linux_amd64.tar.gz\n",
			p: release.Platform{OS: "linux", Arch: "amd64"}, err: "two archives"},
		{name: "ShortSum", in: "abcd  runner-manager_1.2.3_linux_amd64.tar.gz\n", err: "line 1"},
		{name: "NoName", in: good + "\n", err: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sums, err := release.ParseSums(strings.NewReader(tc.in))
			if err == nil {
				var archive, tag string
				archive, tag, err = sums.Archive(tc.p)
				if tc.err == "" {
					require.NoError(t, err)
					require.Equal(t, tc.archive, archive)
					require.Equal(t, tc.tag, tag)
					return
				}
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestTag(t *testing.T) {
	for in, want := range map[string]string{"1.2.3": "v1.2.3", "v1.2.3": "v1.2.3", "v1.2.3-rc.1": "v1.2.3-rc.1", "latest": "", "1.2": "", "v1.2.3/../x": ""} {
		got, err := release.Tag(in)
		if want == "" {
			require.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
}

func TestPackUnpack(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "runner-manager"), filepath.Join(dir, "runner-manager-tui")
	require.NoError(t, os.WriteFile(a, []byte("cli"), 0o755))
	require.NoError(t, os.WriteFile(b, []byte("tui"), 0o755))
	for _, p := range []release.Platform{{OS: "linux", Arch: "arm64"}, {OS: "windows", Arch: "amd64"}} {
		t.Run(p.OS, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, release.Pack(&buf, p, []string{a, b}, time.Unix(0, 0)))
			got, err := release.Unpack(buf.Bytes(), p, "runner-manager-tui")
			require.NoError(t, err)
			require.Equal(t, "tui", string(got))
			_, err = release.Unpack(buf.Bytes(), p, "other")
			require.ErrorIs(t, err, release.ErrNotFound)
			_, err = release.Unpack([]byte("not an archive"), p, "runner-manager")
			require.Error(t, err)
		})
	}
}
