package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// Where a system service keeps its files unless told otherwise.
const (
	SystemConfigPath = "/etc/runner-manager/config.toml"
	SystemDataDir    = "/var/lib/runner-manager"
)

// Executable makes exe (this program's path, as os.Executable gives it)
// fit for a service file: symlinks resolved. A temporary `go run` build is
// refused (rm.ErrInvalid): it is gone once the build cache is cleaned.
func Executable(exe string) (string, error) {
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "", fmt.Errorf("%w: this program runs from a temporary `go run` build (%s): build or install runner-manager first (go install ./frontends/cli/cmd/runner-manager) and run its service install", rm.ErrInvalid, exe)
	}
	return exe, nil
}

// WithDefaults fills in what the user did not give: a system service's
// configuration and data directory in their system places (configGiven and
// dataDirGiven say whether the user named them), and the environment file
// beside the configuration.
func (s Spec) WithDefaults(configGiven, dataDirGiven bool) Spec {
	if !s.User {
		if !configGiven {
			s.ConfigPath = SystemConfigPath
		}
		if !dataDirGiven {
			s.DataDir = SystemDataDir
		}
	}
	if s.EnvFile == "" {
		s.EnvFile = filepath.Join(filepath.Dir(s.ConfigPath), "env")
	}
	return s
}

// Write writes the service file (mode 0644, whole or not at all), creating
// its directory.
func (in Install) Write(user bool) error {
	if err := os.MkdirAll(filepath.Dir(in.Path), 0o755); err != nil {
		return writeErr(in.Path, err, user)
	}
	if err := datadir.WriteFileAtomic(in.Path, []byte(in.Content), 0o644); err != nil {
		return writeErr(in.Path, err, user)
	}
	return nil
}

// Remove removes the service file of a system (or, with user, a per-user)
// service on goos and returns where it was and how to stop it. A systemd
// unit still enabled is left, with an *EnabledError that says how to
// disable it first.
func Remove(goos string, user bool, home, configHome string) (Install, error) {
	// The file's place does not depend on the paths inside it.
	spec := Spec{Executable: "/x", ConfigPath: "/x", DataDir: "/x", User: user}
	in, err := For(goos, spec, home, configHome)
	if err != nil {
		return in, err
	}
	if goos == "linux" {
		if links := enabledLinks(in.Path); len(links) > 0 {
			return in, &EnabledError{Path: in.Path, Links: links, Disable: in.Stop}
		}
	}
	if err := os.Remove(in.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return in, fmt.Errorf("no service file at %s: nothing to remove", in.Path)
		}
		return in, writeErr(in.Path, err, user)
	}
	return in, nil
}

func writeErr(path string, err error, user bool) error {
	if errors.Is(err, fs.ErrPermission) && !user {
		return fmt.Errorf("write %s: %w: a system service needs root (sudo), or install a per-user one with --user", path, err)
	}
	return fmt.Errorf("write %s: %w", path, err)
}
