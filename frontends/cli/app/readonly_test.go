package app_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// Where the data directory cannot be written, the commands that only read
// open the journal read-only and say so; those that write name the cause.
// The directory is made unwritable for real (mode 0500): run as root, which
// ignores modes, the test runs its checks in a child as user nobody.
func TestReadOnlyDataDir(t *testing.T) {
	if dir := os.Getenv("RM_TEST_READONLY_DIR"); dir != "" {
		checkReadOnlyDataDir(t, dir) // the child
		return
	}
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", e.runnerDir())
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(e.dataDir, 0o500))
		t.Cleanup(func() { _ = os.Chmod(e.dataDir, 0o700) })
		checkReadOnlyDataDir(t, e.dataDir)
		return
	}
	// As root: hand the home to nobody, copy this test binary where nobody
	// may run it, and run this test there.
	const nobody = 65534
	for dir := e.home; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	require.NoError(t, filepath.Walk(e.home, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}))
	bin := filepath.Join(e.home, "app.test")
	copyFile(t, os.Args[0], bin)
	require.NoError(t, os.Chmod(e.dataDir, 0o500))

	cmd := exec.Command(bin, "-test.run=^TestReadOnlyDataDir$", "-test.v")
	// Its temporary files go in the home nobody owns (TMPDIR is this
	// process's, which only root may write).
	cmd.Env = append(os.Environ(), "RM_TEST_READONLY_DIR="+e.dataDir, "TMPDIR="+e.home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the checks as user nobody:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestReadOnlyDataDir", "the child ran the checks:\n%s", out)
}

func checkReadOnlyDataDir(t *testing.T, dataDir string) {
	e := newEnv(t)
	e.dataDir = dataDir
	require.Error(t, os.WriteFile(filepath.Join(dataDir, "probe"), nil, 0o600), "the data dir is writable: the test cannot check anything")

	for _, args := range [][]string{{"policy", "list"}, {"policy", "show", "home"}, {"status"}, {"attempts"}} {
		r := e.run(args...)
		require.Equal(t, 0, r.code, "%s\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
		assert.Contains(t, r.stderr, "note: data dir "+dataDir+" is read-only (permission denied): the journal is open for reading only", args)
	}
	assert.Contains(t, e.ok("policy", "list"), "home")

	for _, args := range [][]string{
		{"policy", "add", "x", "--repo", "octo/app", "--scale-set", "x"},
		{"policy", "pause", "home"},
		{"policy", "rm", "home"},
	} {
		stderr := e.fails(1, args...)
		assert.Contains(t, stderr, "data dir "+dataDir+" is read-only (permission denied): this command writes the journal there", args)
		assert.NotContains(t, stderr, "no such file", args)
		assert.NotContains(t, stderr, "readonly database", args)
	}
}

// The note names what the probe found (a file system mounted read-only
// here), and the commands still read.
func TestReadOnlyDataDirNote(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", e.runnerDir())
	defer app.SetDirWritable(func(string) error { return syscall.EROFS })()
	r := e.run("policy", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "note: data dir "+e.dataDir+" is read-only (read-only file system): the journal is open for reading only\n", r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "["), "the JSON is on standard output alone: %s", r.stdout)
}

// No journal is a usage error (exit status 2), for every command that
// reads one, and creates nothing.
func TestNoJournal(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"policy", "list"}, {"policy", "show", "x"}, {"policy", "rm", "x"}, {"attempts"}, {"logs", "x"}, {"tui"}} {
		e := newEnv(t).noDataDir()
		stderr := e.fails(app.ExitLocalState, args...)
		assert.Contains(t, stderr, "no journal in "+e.dataDir, args)
		_, err := os.Stat(e.dataDir)
		assert.ErrorIs(t, err, os.ErrNotExist, "reading creates nothing")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	require.NoError(t, os.Chown(to, 65534, 65534))
}
