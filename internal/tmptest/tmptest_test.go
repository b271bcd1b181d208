package tmptest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/runner-manager/runner-manager/internal/tmptest"
)

// enter runs Enter over parent and returns the directory it made.
func enter(t *testing.T, parent string) (dir string) {
	t.Helper()
	t.Setenv("TMPDIR", parent)
	tmptest.Enter()
	dir = tmptest.Dir()
	if filepath.Dir(dir) != parent || os.Getenv("TMPDIR") != dir || os.TempDir() != dir {
		t.Fatalf("Enter made %q with TMPDIR=%q, want a directory in %q that TMPDIR names", dir, os.Getenv("TMPDIR"), parent)
	}
	t.Cleanup(func() { tmptest.Leave(0) }) // a no-op after the test's own Leave
	return dir
}

func TestLeave(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int
		leak     bool
		want     int
		cleanups int
	}{
		{name: "clean", code: 0, want: 0},
		{name: "clean, tests failed", code: 3, want: 3},
		{name: "leak fails a passing run", code: 0, leak: true, want: 1},
		{name: "leak keeps a failing run's code", code: 2, leak: true, want: 2},
		{name: "process-wide build removed by its cleanup", code: 0, cleanups: 1, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := enter(t, parent)
			if tc.leak {
				if err := os.MkdirAll(filepath.Join(dir, "leak", "ro"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, "leak"), 0o500); err != nil { // removable all the same
					t.Fatal(err)
				}
			}
			var cleanups []func()
			for range tc.cleanups {
				build, err := os.MkdirTemp("", "build-") // in dir: TMPDIR names it
				if err != nil {
					t.Fatal(err)
				}
				cleanups = append(cleanups, func() { _ = os.RemoveAll(build) })
			}
			if got := tmptest.Leave(tc.code, cleanups...); got != tc.want {
				t.Errorf("Leave(%d) = %d, want %d", tc.code, got, tc.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("Leave left %s: %v", dir, err)
			}
			if got := os.Getenv("TMPDIR"); got != parent {
				t.Errorf("TMPDIR = %q after Leave, want %q back", got, parent)
			}
		})
	}
}

func TestLeftoversNamesWhatIsLeft(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "a-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := tmptest.Leftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-dir (0B)", "b.txt (2KiB)"} // sizes as bytesize.Format prints them
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Leftovers = %q, want %q", got, want)
	}
}

// TestEnterRemovesStale: the directory of a test process that is gone is
// removed; one of a live process, or one without an owner, is not.
func TestEnterRemovesStale(t *testing.T) {
	parent := t.TempDir()
	gone := exec.Command(os.Args[0], "-test.run=^$")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for name, owner := range map[string]string{
		"rmt-gone":  strconv.Itoa(gone.Process.Pid),
		"rmt-live":  strconv.Itoa(os.Getppid()),
		"rmt-other": "",
	} {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ".owner.pid"), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	enter(t, parent)
	for name, want := range map[string]bool{"rmt-gone": false, "rmt-live": true, "rmt-other": true} {
		_, err := os.Stat(filepath.Join(parent, name))
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v", name, got, want)
		}
	}
}
