//go:build linux

package native_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform/native"
)

// BenchmarkNativeLaunch measures what Launch adds between "launch this
// attempt" and a started listener, from an install the size of a real
// runner's bin/ (about 500 files): "cold" builds the attempt root (hard
// links, a dozen files and directories) and forks; "warm" renames a spare
// root that the previous attempt's Cleanup prepared, as in steady operation,
// and forks. "disk" keeps install and data directory in the temp dir,
// "tmpfs" in /dev/shm: making a file costs what the filesystem asks. Waiting
// for the listener and Cleanup are not timed.
func BenchmarkNativeLaunch(b *testing.B) {
	shm, err := os.MkdirTemp("/dev/shm", "bench-")
	if err == nil {
		b.Cleanup(func() { os.RemoveAll(shm) })
	}
	for _, fs := range []string{"disk", "tmpfs"} {
		for _, warm := range []bool{false, true} {
			name := fs + "/cold"
			if warm {
				name = fs + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				if fs == "tmpfs" {
					if shm == "" {
						b.Skip("no /dev/shm")
					}
					dir, err = os.MkdirTemp(shm, "")
					if err != nil {
						b.Fatal(err)
					}
				}
				benchLaunch(b, filepath.Join(dir, "runner"), filepath.Join(dir, "data"), warm)
			})
		}
	}
}

func benchLaunch(b *testing.B, installed, data string, warm bool) {
	for i := range 500 {
		path := filepath.Join(installed, "bin", fmt.Sprintf("dir%d", i%8), fmt.Sprintf("lib%d.dll", i))
		if i%8 == 0 {
			path = filepath.Join(installed, "bin", fmt.Sprintf("lib%d.dll", i))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, 1024), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(installed, "bin", "Runner.Listener"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"externals/node20", "externals/git"} {
		if err := os.MkdirAll(filepath.Join(installed, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{"run.sh", "config.sh", "env.sh", ".env", ".path"} {
		if err := os.WriteFile(filepath.Join(installed, f), []byte("#\n"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	l := native.NewLauncher(data)
	cleaner := native.NewLauncher(data) // knows no install: prepares no spare
	if warm {
		cleaner = l
	}
	b.ResetTimer()
	for b.Loop() {
		id := rm.NewAttemptID()
		p, err := l.Launch(b.Context(), rm.LaunchSpec{Attempt: id, RunnerDir: installed, JITConfig: "jit"})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		<-p.Done()
		if err := cleaner.Cleanup(id, false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
