// Command mkrelease builds runner-manager's release archives: for each
// platform, the CLI and the TUI built with cgo (the journal is SQLite
// through mattn/go-sqlite3) and the version stamped in, packed as package
// release names them, and SHA256SUMS beside them.
//
//	go run ./internal/mkrelease -version v1.2.3 [-out dist] [-platforms linux/amd64,windows/amd64]
//
// On Linux it builds linux/amd64, linux/arm64 and windows/amd64 by
// default, through Debian's cross compilers (gcc-aarch64-linux-gnu,
// gcc-mingw-w64-x86-64); on macOS darwin/arm64 and darwin/amd64 with the
// system's clang. A platform whose compiler is missing is refused before
// anything is built, naming the package to install. It is a Go program,
// not a shell script, so that it packs and names archives with the same
// code `runner-manager update` unpacks them with, and runs alike on Linux
// and macOS (no tar, zip or sha256sum flavours to mind).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/release"
)

// compiler is the C compiler cgo uses for a platform when building on
// host, and the Debian package that has it.
type compiler struct{ cc, pkg string }

func compilerFor(host string, p release.Platform) (compiler, bool) {
	switch {
	case host == "darwin" && p.OS == "darwin":
		return compiler{"clang", "the Xcode command line tools (xcode-select --install)"}, true
	case host == "linux" && p == release.Platform{OS: "linux", Arch: runtime.GOARCH}:
		return compiler{"gcc", "gcc"}, true
	case host == "linux" && p == release.Platform{OS: "linux", Arch: "arm64"}:
		return compiler{"aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"}, true
	case host == "linux" && p == release.Platform{OS: "linux", Arch: "amd64"}:
		return compiler{"x86_64-linux-gnu-gcc", "gcc-x86-64-linux-gnu"}, true
	case host == "linux" && p == release.Platform{OS: "windows", Arch: "amd64"}:
		return compiler{"x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64"}, true
	}
	return compiler{}, false
}

func defaultPlatforms(host string) string {
	if host == "darwin" {
		return "darwin/arm64,darwin/amd64"
	}
	return "linux/amd64,linux/arm64,windows/amd64"
}

func main() {
	version := flag.String("version", "", "the release's version (v1.2.3), stamped into the programs and the archives' names")
	out := flag.String("out", "dist", "the directory the archives and SHA256SUMS go to")
	platforms := flag.String("platforms", defaultPlatforms(runtime.GOOS), "comma-separated GOOS/GOARCH to build")
	flag.Parse()
	if err := run(*version, *out, *platforms); err != nil {
		fmt.Fprintln(os.Stderr, "mkrelease:", err)
		os.Exit(1)
	}
}

func run(version, out, platforms string) error {
	tag, err := release.Tag(version)
	if err != nil {
		return err
	}
	var ps []release.Platform
	var missing []string
	ccs := map[release.Platform]string{}
	for _, s := range strings.Split(platforms, ",") {
		goos, goarch, _ := strings.Cut(strings.TrimSpace(s), "/")
		p := release.Platform{OS: goos, Arch: goarch}
		if !p.Supported() {
			return fmt.Errorf("%s is not a platform releases are built for", s)
		}
		c, ok := compilerFor(runtime.GOOS, p)
		if !ok {
			return fmt.Errorf("%s is not built on %s (macOS archives are built on a Mac, the others on Linux)", p, runtime.GOOS)
		}
		if _, err := exec.LookPath(c.cc); err != nil {
			missing = append(missing, fmt.Sprintf("%s needs %s: install %s", p, c.cc, c.pkg))
		}
		ps, ccs[p] = append(ps, p), c.cc
	}
	if len(missing) > 0 {
		return errors.New("a C compiler is missing (cgo builds the SQLite journal):\n  " + strings.Join(missing, "\n  "))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	stamp := commitTime(root)
	sums := release.Sums{}
	for _, p := range ps {
		start := time.Now()
		name, data, err := build(root, tag, p, ccs[p], stamp)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
		sums[name] = release.Sum(data)
		fmt.Printf("%-50s %6.1f MiB  %5.1fs\n", name, float64(len(data))/(1<<20), time.Since(start).Seconds())
	}
	if err := os.WriteFile(filepath.Join(out, release.SumsName), sums.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s\n", filepath.Join(out, release.SumsName))
	return nil
}

// build builds both programs for p into a temporary directory and packs
// them; it returns the archive's name and bytes.
func build(root, tag string, p release.Platform, cc string, stamp time.Time) (string, []byte, error) {
	tmp, err := os.MkdirTemp("", "mkrelease-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	pkgs := map[string]string{
		"runner-manager":     "./frontends/cli/cmd/runner-manager",
		"runner-manager-tui": "./frontends/tui/cmd/runner-manager-tui",
	}
	var paths []string
	for _, prog := range release.Programs {
		path := filepath.Join(tmp, p.Exe(prog))
		cmd := exec.Command("go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/runner-manager/runner-manager.stampedVersion="+tag,
			"-o", path, pkgs[prog])
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS="+p.OS, "GOARCH="+p.Arch, "CC="+cc)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", nil, fmt.Errorf("go build %s: %w", prog, err)
		}
		paths = append(paths, path)
	}
	var b bytes.Buffer
	if err := release.Pack(&b, p, paths, stamp); err != nil {
		return "", nil, err
	}
	return release.ArchiveName(tag, p), b.Bytes(), nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run mkrelease inside the runner-manager module")
	}
	return filepath.Dir(mod), nil
}

// commitTime is HEAD's commit time, the archives' files' time, so two
// builds of one commit pack alike; now outside a git checkout.
func commitTime(root string) time.Time {
	cmd := exec.Command("git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var sec int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &sec); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Now().UTC()
}
