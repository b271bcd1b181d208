// Package tmptest gives a test process a temporary directory of its own and
// checks that the tests leave nothing in it.
//
// A package's TestMain calls Enter before m.Run and Leave after it:
//
//	func TestMain(m *testing.M) {
//		tmptest.Enter()
//		os.Exit(tmptest.Leave(m.Run(), fakegithub.RemoveRunnerBuild))
//	}
//
// Enter points TMPDIR at a new directory, so os.TempDir, t.TempDir,
// os.MkdirTemp("", …) and every child process (a daemon, a runner, go
// build) put what they make there. Leave runs the cleanups of what the
// process keeps for all its tests (a fake runner built once), then fails the
// run if anything else is left, naming it, and removes the directory
// whatever it holds: a test suite that leaks is told so, and the machine's
// temporary directory does not fill up run after run.
package tmptest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/runner-manager/runner-manager/internal/bytesize"
)

const (
	// prefix is short: unix socket paths made under t.TempDir must stay
	// under about 100 bytes.
	prefix    = "rmt-"
	ownerFile = ".owner.pid"
)

var state struct {
	dir     string // the process's own directory; "" outside Enter/Leave
	prev    string // TMPDIR before Enter
	hadPrev bool
}

// Enter makes a directory of this process's own in the temporary directory
// and points TMPDIR at it. It first removes such directories of earlier test
// processes that are gone (killed before their Leave). It exits the process
// when the directory cannot be made: no test could run honestly without it.
func Enter() {
	parent := os.TempDir()
	removeStale(parent)
	dir, err := os.MkdirTemp(parent, prefix)
	if err == nil {
		// Others may pass through, not list: a test that runs a program
		// as another user (the read-only data directory's, as nobody)
		// opens its own directories to it below, as it did below /tmp.
		err = os.Chmod(dir, 0o711)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tmptest: make the tests' temporary directory: %v\n", err)
		os.Exit(1)
	}
	state.prev, state.hadPrev = os.LookupEnv("TMPDIR")
	state.dir = dir
	_ = os.Setenv("TMPDIR", dir)
}

// Dir is the directory Enter made ("" before Enter or after Leave).
func Dir() string { return state.dir }

// Leave runs cleanups, then reports what is left in the directory Enter
// made and removes it, restoring TMPDIR. It returns code, or 1 when the
// tests passed but left something: use it as the process's exit code.
func Leave(code int, cleanups ...func()) int {
	if state.dir == "" {
		return code
	}
	for _, c := range cleanups {
		c()
	}
	// A child of these tests that is this test binary too (a daemon or a
	// runner it started) made a directory of its own here; one killed
	// before its Leave (kill -9 is what some tests do) is removed with it.
	removeStale(state.dir)
	left, err := Leftovers(state.dir)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "tmptest: list the tests' temporary directory: %v\n", err)
	case len(left) > 0:
		fmt.Fprintf(os.Stderr, "tmptest: the tests left %d entries in the temporary directory (remove them in the test, or use t.TempDir): %s\n",
			len(left), strings.Join(left, ", "))
	}
	if (err != nil || len(left) > 0) && code == 0 {
		code = 1
	}
	if err := removeAll(state.dir); err != nil {
		fmt.Fprintf(os.Stderr, "tmptest: remove the tests' temporary directory: %v\n", err)
	}
	if state.hadPrev {
		_ = os.Setenv("TMPDIR", state.prev)
	} else {
		_ = os.Unsetenv("TMPDIR")
	}
	state.dir = ""
	return code
}

// Leftovers lists the entries of dir other than its owner file, sorted,
// each with its size when it is a directory.
func Leftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, e := range entries {
		if e.Name() == ownerFile {
			continue
		}
		left = append(left, fmt.Sprintf("%s (%s)", e.Name(), bytesize.Format(uint64(size(filepath.Join(dir, e.Name()))))))
	}
	sort.Strings(left)
	return left, nil
}

func size(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// removeAll removes dir, making read-only directories in it writable first
// (go build's module cache and some tests make them).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// removeStale removes the directories of earlier test processes that are
// gone: one killed (a timeout, kill -9) never reaches Leave.
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or being made
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = removeAll(d)
	}
}

// alive reports whether process pid exists (signal 0 reaches it, or it
// belongs to another user).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	if runtime.GOOS == "windows" {
		return true // signal 0 is Unix's
	}
	err = p.Signal(syscall.Signal(0))
	return (err == nil || err == syscall.EPERM) && !zombie(pid)
}

// zombie reports whether pid has exited and waits to be reaped (Linux's
// state Z): a test helper killed after it left its parent's tree waits for
// init, which may reap it late, and is as gone as a reaped one.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
