//go:build linux

// Package containertest gives tests a real container engine: DOCKER_HOST
// when set, else a Podman Docker-compatible service started for the test
// binary (runc, rlimits this machine admits), and a runner image built on
// it FROM scratch with the statically built fake runner. Without an engine
// the tests skip, or fail under RUNNER_MANAGER_REQUIRE_PODMAN=1.
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// RequireEnv names the variable that makes a missing engine fail the tests instead of skipping
// them (CI sets it).
const RequireEnv = "RUNNER_MANAGER_REQUIRE_PODMAN"

// Image is the image the tests build: FROM scratch, the statically
// built fake runner in container.DefaultRunnerDir.
const Image = "localhost/runner-manager-test-runner:latest"

// The engine of this test process: DOCKER_HOST when set (.ci/run starts
// Podman's service and sets it), else a Podman service this process starts
// on a socket of its own, if podman is installed.
var engine struct {
	once    sync.Once
	e       *container.Engine
	host    string
	skip    string
	err     error
	service *exec.Cmd
	dir     string

	imageOnce sync.Once
	imageErr  error

	shellOnce sync.Once
	shellErr  error
}

// Stop stops the engine service the tests started, if any, and returns
// code, and removes the fake runner the tests built (fakegithub.BuildRunner):
// call it in TestMain, os.Exit(containertest.Stop(m.Run())).
func Stop(code int) int {
	stopService()
	fakegithub.RemoveRunnerBuild()
	return code
}

// Engine returns the tests' engine and its address, skipping the test (failing it
// under RUNNER_MANAGER_REQUIRE_PODMAN=1) when there is none.
func Engine(t testing.TB) (*container.Engine, string) {
	t.Helper()
	engine.once.Do(setupEngine)
	switch {
	case engine.err != nil:
		t.Fatalf("container engine: %v", engine.err)
	case engine.skip != "" && os.Getenv(RequireEnv) == "1":
		t.Fatalf("%s=1 but %s", RequireEnv, engine.skip)
	case engine.skip != "":
		t.Skip(engine.skip)
	}
	return engine.e, engine.host
}

func setupEngine() {
	host := os.Getenv(client.EnvOverrideHost)
	if host == "" {
		if _, err := exec.LookPath("podman"); err != nil {
			engine.skip = "no container engine: DOCKER_HOST is unset and podman is not installed (apt-get install podman runc)"
			return
		}
		if host, engine.err = startService(); engine.err != nil {
			return
		}
		// A child of the tests (a launcher killed with SIGKILL) connects
		// to this service, not one of its own that nobody stops.
		_ = os.Setenv(client.EnvOverrideHost, host)
	}
	e, err := container.Connect(host)
	if err != nil {
		engine.err = err
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Ping(ctx); err != nil {
		engine.err = fmt.Errorf("the engine at %s does not answer: %w", host, err)
		return
	}
	engine.e, engine.host = e, host
}

// startService starts `podman system service` on a socket in a temporary
// directory, with runc and rlimits this machine admits (see
// docs/containers.md), and waits for it to answer.
func startService() (string, error) {
	dir, err := os.MkdirTemp("", "runner-manager-podman-")
	if err != nil {
		return "", err
	}
	engine.dir = dir
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf()), 0o600); err != nil {
		return "", err
	}
	sock := filepath.Join(dir, "podman.sock")
	cmd := exec.Command("podman", "system", "service", "--time=0", "unix://"+sock)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	// conmon writes a file "oom" into its working directory when the
	// kernel kills a container's process: keep it out of the package's.
	cmd.Dir = dir
	logf, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start podman system service: %w", err)
	}
	engine.service = cmd
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			return "unix://" + sock, nil
		}
	}
	out, _ := os.ReadFile(filepath.Join(dir, "service.log"))
	return "", fmt.Errorf("podman system service did not listen on %s within 30 s:\n%s", sock, out)
}

// containersConf says: runc (crun fails on cgroups here), cgroupfs, and
// rlimits no higher than this process's hard ones (raising them needs
// CAP_SYS_RESOURCE), NPROC no higher than the 32768 Podman sets itself.
func containersConf() string {
	var nproc, nofile syscall.Rlimit
	_ = syscall.Getrlimit(6 /* RLIMIT_NPROC */, &nproc)
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile)
	np := min(nproc.Max, 32768)
	return fmt.Sprintf(`[containers]
default_ulimits = ["nproc=%d:%d", "nofile=%d:%d"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`, np, np, nofile.Max, nofile.Max)
}

func stopService() {
	if engine.e != nil {
		_ = engine.e.Close()
	}
	if engine.service != nil {
		_ = syscall.Kill(-engine.service.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = engine.service.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-engine.service.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if engine.dir != "" {
		_ = os.RemoveAll(engine.dir)
	}
}

// ShellImage is Image with a shell: a static busybox as /bin/busybox and
// /bin/sh, for jobs whose steps are scripts; its runner directory is
// uid 1001's (ShellImageUser), as in GitHub's actions-runner image, so
// that it runs as root or as that user.
const ShellImage = "localhost/runner-manager-test-runner-sh:latest"

// ShellImageUser owns ShellImage's runner directory.
const ShellImageUser = "1001:1001"

// RunnerShellImage builds ShellImage once per test process, from the
// host's static busybox (Debian's busybox-static, which .ci/vm-kernel
// installs); without one the test skips, or fails under
// RUNNER_MANAGER_REQUIRE_PODMAN=1.
func RunnerShellImage(t testing.TB) string {
	t.Helper()
	_, _ = Engine(t)
	bb, err := exec.LookPath("busybox")
	if err == nil {
		if out, lerr := exec.Command("ldd", bb).CombinedOutput(); lerr == nil || !strings.Contains(string(out), "not a dynamic") {
			err = fmt.Errorf("busybox %s is dynamically linked: want a static one (busybox-static)", bb)
		}
	}
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but no static busybox for the shell image: %v", RequireEnv, err)
		}
		t.Skipf("no static busybox for the shell image (apt-get install busybox-static): %v", err)
	}
	engine.shellOnce.Do(func() {
		body, err := os.ReadFile(bb)
		if err != nil {
			engine.shellErr = err
			return
		}
		engine.shellErr = buildImage(engine.host, ShellImage, ShellImageUser, file{name: "bin/busybox", mode: 0o755, body: body}, file{name: "bin/sh", link: "busybox"})
	})
	require.NoError(t, engine.shellErr)
	return ShellImage
}

// file is one file of a test image's build context.
type file struct {
	name string
	mode int64
	body []byte
	link string // a symbolic link to this, when set
}

// RunnerImage builds Image once per test process through the
// engine's build API: FROM scratch, the fake runner (static: CGO_ENABLED=0)
// as <DefaultRunnerDir>/bin/Runner.Listener.
func RunnerImage(t testing.TB) string {
	t.Helper()
	_, _ = Engine(t)
	engine.imageOnce.Do(func() { engine.imageErr = buildImage(engine.host, Image, "") })
	require.NoError(t, engine.imageErr)
	return Image
}

// buildImage builds image: FROM scratch, the fake runner as
// <DefaultRunnerDir>/bin/Runner.Listener (owner's, when set), and extra
// files.
func buildImage(host, image, owner string, extra ...file) error {
	install, err := fakegithub.BuildRunner()
	if err != nil {
		return err
	}
	listener, err := os.ReadFile(filepath.Join(install, "bin", fakegithub.ListenerName()))
	if err != nil {
		return err
	}
	dir := strings.TrimPrefix(container.DefaultRunnerDir, "/")
	chown := ""
	if owner != "" {
		chown = "--chown=" + owner + " "
	}
	dockerfile := "FROM scratch\nCOPY " + chown + dir + " /" + dir + "\n"
	for _, f := range extra {
		dockerfile += "COPY " + f.name + " /" + f.name + "\n"
	}
	dockerfile += "WORKDIR /" + dir + "\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := append([]file{
		{name: "Dockerfile", mode: 0o644, body: []byte(dockerfile)},
		{name: dir + "/bin/Runner.Listener", mode: 0o755, body: listener},
	}, extra...)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: time.Now()}
		if f.link != "" {
			h = &tar.Header{Name: f.name, Typeflag: tar.TypeSymlink, Linkname: f.link, Mode: 0o777, ModTime: time.Now()}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := client.New(client.FromEnv, client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{image}, Remove: true, ForceRemove: true})
	if err != nil {
		return fmt.Errorf("build %s: %w", image, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("build %s: %w", image, err)
	}
	if bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("build %s: %s", image, out)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("build %s: the image is not there after the build: %w\n%s", image, err, out)
	}
	return nil
}
