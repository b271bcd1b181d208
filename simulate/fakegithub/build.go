package fakegithub

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// FakeRunnerPackage is the import path of the fake runner's command.
const FakeRunnerPackage = "github.com/runner-manager/runner-manager/simulate/fakerunner/cmd/Runner.Listener"

// ListenerName is the runner listener's file name in bin/ on this OS.
func ListenerName() string {
	if runtime.GOOS == "windows" {
		return "Runner.Listener.exe"
	}
	return "Runner.Listener"
}

var fakeRunner struct {
	once  sync.Once
	dir   string
	err   error
	mu    sync.Mutex
	built string // dir, for RemoveRunnerBuild, which must not wait on once
}

// BuildRunner builds the fake runner once per process (go build, so it
// needs the Go tool and this module's source) and returns an install
// directory laid out like an installed runner: bin/Runner.Listener,
// externals/, run.sh. Give each runner its own root with a bin/ of hard
// links to it (the runner writes its JIT files into its root). The
// directory is shared by every caller in the process: a test package's
// TestMain removes it with RemoveRunnerBuild once its tests end; stale ones
// of earlier runs that did not are removed after a day.
func BuildRunner() (string, error) {
	fakeRunner.once.Do(func() {
		fakeRunner.dir, fakeRunner.err = buildFakeRunner()
		fakeRunner.mu.Lock()
		fakeRunner.built = fakeRunner.dir
		fakeRunner.mu.Unlock()
	})
	if fakeRunner.err != nil {
		return "", fmt.Errorf("building the fake runner: %w", fakeRunner.err)
	}
	return fakeRunner.dir, nil
}

// RemoveRunnerBuild removes the directory BuildRunner built in this process,
// if it did: call it after every test that uses it has ended (from TestMain,
// after m.Run). A later BuildRunner returns the removed directory.
func RemoveRunnerBuild() {
	fakeRunner.mu.Lock()
	defer fakeRunner.mu.Unlock()
	if fakeRunner.built != "" {
		_ = os.RemoveAll(fakeRunner.built)
	}
}

const buildDirPrefix = "runner-manager-fakerunner-"

func buildFakeRunner() (string, error) {
	removeStaleBuilds()
	dir, err := os.MkdirTemp("", buildDirPrefix)
	if err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(dir, "bin", ListenerName())
	cmd := exec.Command(goTool, "build", "-o", bin, FakeRunnerPackage)
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Dir(file) // inside the module, wherever the test runs
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %w\n%s", FakeRunnerPackage, err, out)
	}
	if err := LayoutRunnerDir(dir, bin); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func removeStaleBuilds() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), buildDirPrefix+"*"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(m)
		}
	}
}

// LayoutRunnerDir makes dir an installed runner whose listener is the
// program listener (a hard link to it, or a copy across filesystems):
// bin/Runner.Listener, bin/Runner.Worker, externals/node20/bin/node, run.sh,
// config.sh and env.sh. The demo uses it with its own executable, which runs
// the fake runner when invoked as Runner.Listener.
func LayoutRunnerDir(dir, listener string) error {
	bin := filepath.Join(dir, "bin")
	node := filepath.Join(dir, "externals", "node20", "bin")
	for _, d := range []string{bin, node} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := linkOrCopy(listener, filepath.Join(bin, ListenerName())); err != nil {
		return fmt.Errorf("installing the listener: %w", err)
	}
	for _, f := range packageFiles(runtime.GOOS == "windows", RunnerVersion, nil) {
		if strings.HasPrefix(f.name, "bin/Runner.Listener") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.body), os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	return nil
}

func linkOrCopy(src, dst string) error {
	if same(src, dst) {
		return nil
	}
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
