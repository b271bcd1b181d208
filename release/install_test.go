package release_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/release"
)

// installScript is install.sh at the module's root.
const installScript = "../install.sh"

// cleanTools is a directory holding only the commands install.sh needs
// (links to this machine's), so the script runs with a PATH that has no
// Go and no compiler; id and uname are stand-ins that say uid and
// platform (uname -s, uname -m).
func cleanTools(t *testing.T, uid, sysname, machine string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"sh", "cat", "chmod", "cp", "curl", "cut", "grep", "gzip", "mkdir", "mktemp", "mv", "rm", "sed", "sha256sum", "tar", "tr", "wc"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("install.sh's test needs %s: %v", name, err)
		}
		require.NoError(t, os.Symlink(path, filepath.Join(dir, name)))
	}
	stub := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	stub("id", "echo "+uid)
	stub("uname", `case $1 in -s) echo `+sysname+` ;; -m) echo `+machine+` ;; esac`)
	return dir
}

// unameOf is what uname says on the test's platform.
func unameOf(t *testing.T) (string, string) {
	t.Helper()
	sys := map[string]string{"linux": "Linux", "darwin": "Darwin"}[runtime.GOOS]
	mach := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if sys == "" || mach == "" {
		t.Skipf("install.sh installs on Linux and macOS, amd64 and arm64; not %s", here)
	}
	return sys, mach
}

// runInstall runs install.sh with a fresh HOME and tools' PATH; it returns
// its output and error.
func runInstall(t *testing.T, home, tools string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(tools, "sh"), append([]string{installScript}, args...)...)
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + tools}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestInstallScript: install.sh, in a fresh HOME with a PATH that has no
// Go, installs the real runner-manager from a release served over
// loopback to ~/.local/bin, and the installed program runs the demo; a tampered
// archive, a release without this platform's checksum, and a platform no
// release is built for are refused with nothing installed.
func TestInstallScript(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("install.sh is for Linux and macOS (install.ps1 is Windows')")
	}
	sys, mach := unameOf(t)
	rel := releaseOf(t, testVersion, here, builtCLI(t))
	archive := release.ArchiveName(testVersion, here)

	t.Run("OK", func(t *testing.T) {
		srv := serve(t, testVersion, rel)
		home, tools := t.TempDir(), cleanTools(t, "1000", sys, mach)
		out, err := runInstall(t, home, tools, nil, "--base-url", srv.URL)
		require.NoError(t, err, out)
		bin := filepath.Join(home, ".local", "bin")
		require.Contains(t, out, "installed runner-manager 1.2.3 to "+bin)
		require.Contains(t, out, `export PATH="`+bin+`:$PATH"`)
		for _, prog := range release.Programs {
			fi, err := os.Stat(filepath.Join(bin, prog))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
		}
		// The installed program runs, with the PATH the script had.
		cmd := exec.Command(filepath.Join(bin, "runner-manager"), "--version")
		cmd.Env = []string{"HOME=" + home, "PATH=" + tools}
		got, err := cmd.CombinedOutput()
		require.NoError(t, err, string(got))
		require.Contains(t, string(got), testVersion)
		// And runs the demo: the whole manager against its built-in fake
		// GitHub, its runners hard links to the installed program.
		cmd = exec.Command(filepath.Join(bin, "runner-manager"), "demo", "--jobs", "2", "--policies", "1", "--timeout", "60s")
		cmd.Env = []string{"HOME=" + home, "PATH=" + tools, "TMPDIR=" + t.TempDir()}
		got, err = cmd.CombinedOutput()
		require.NoError(t, err, string(got))
		require.Contains(t, string(got), "jobs served:        2 of 2")
	})

	t.Run("PinnedVersion", func(t *testing.T) {
		srv := serve(t, testVersion, rel)
		home, tools := t.TempDir(), cleanTools(t, "1000", sys, mach)
		dir := filepath.Join(t.TempDir(), "bin")
		out, err := runInstall(t, home, tools, []string{"RUNNER_MANAGER_BASE_URL=" + srv.URL, "RUNNER_MANAGER_VERSION=1.2.3"}, "--dir", dir)
		require.NoError(t, err, out)
		require.FileExists(t, filepath.Join(dir, "runner-manager"))

		out, err = runInstall(t, home, tools, []string{"RUNNER_MANAGER_BASE_URL=" + srv.URL}, "--version", "v9.9.9", "--dir", t.TempDir())
		require.Error(t, err, out)
		require.Contains(t, out, "could not download "+srv.URL+"/download/v9.9.9/SHA256SUMS")
	})

	tampered := files{}
	for name, data := range rel {
		tampered[name] = data
	}
	bad := bytes.Clone(rel[archive])
	bad[len(bad)/2] ^= 0xff
	tampered[archive] = bad

	for _, tc := range []struct {
		name, sysname, machine string
		rel                    files
		want                   string
	}{
		{"Tampered", sys, mach, tampered, "refusing it, nothing installed"},
		{"NoChecksum", sys, mach, files{archive: rel[archive], release.SumsName: []byte(strings.Repeat("0", 64) + "  other-file\n")}, "lists no archive for " + here.String()},
		{"NoSums", sys, mach, files{archive: rel[archive]}, "could not download"},
		{"TwoArchives", sys, mach, files{archive: rel[archive], release.SumsName: append(bytes.Clone(rel[release.SumsName]),
			[]byte(strings.Repeat("0", 64)+"  "+release.ArchiveName("v9.9.9", here)+"\n")...)}, "more than one archive"},
		{"UnknownOS", "Plan9", mach, rel, "no release is built for Plan9"},
		{"UnknownCPU", sys, "riscv64", rel, "no release is built for riscv64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, testVersion, tc.rel)
			home, tools := t.TempDir(), cleanTools(t, "1000", tc.sysname, tc.machine)
			out, err := runInstall(t, home, tools, nil, "--base-url", srv.URL)
			require.Error(t, err, out)
			require.Contains(t, out, tc.want)
			_, err = os.Stat(filepath.Join(home, ".local"))
			require.True(t, os.IsNotExist(err), "nothing is installed: %v", err)
		})
	}
}
