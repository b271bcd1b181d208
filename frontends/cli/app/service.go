package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/runner-manager/runner-manager/platform/service"
	"github.com/runner-manager/runner-manager/reconcile/daemon/config"
)

// ServiceCmd groups the service commands.
type ServiceCmd struct {
	Install   ServiceInstallCmd   `cmd:"" help:"Write a systemd unit (Linux) or launchd property list (macOS) that runs the daemon."`
	Uninstall ServiceUninstallCmd `cmd:"" help:"Remove the service file."`
}

// Help is the long help of service.
func (c *ServiceCmd) Help() string {
	return `The service runs "runner-manager run" with RUNNER_MANAGER_CONFIG and
RUNNER_MANAGER_DATA_DIR set. It never holds a secret: with systemd the token
goes in an environment file (mode 0600) the unit reads; with launchd use
token_file in the configuration.

A system service (the default) uses /etc/runner-manager/config.toml and
/var/lib/runner-manager unless --config or --data-dir say otherwise; a --user
service uses your own configuration and data directory.`
}

// serviceFlags are shared by install and uninstall.
type serviceFlags struct {
	User bool `help:"A per-user service (systemctl --user, a LaunchAgent) instead of a system one."`
}

// ServiceInstallCmd writes the service file.
type ServiceInstallCmd struct {
	serviceFlags
	Print   bool   `help:"Print the file instead of writing it."`
	RunAs   string `help:"The account a system service runs as (recommended: a dedicated one, not root)." placeholder:"USER"`
	EnvFile string `help:"Where the token goes for systemd (default: env beside the configuration file)." placeholder:"FILE"`
}

// osExecutable finds this program (tests replace it).
var osExecutable = os.Executable

// systemDefaults are where a system service keeps its files.
const (
	systemConfigPath = "/etc/runner-manager/config.toml"
	systemDataDir    = "/var/lib/runner-manager"
)

func (a *App) serviceSpec(user bool, runAs, envFile string) (service.Spec, error) {
	cfg, err := a.Config()
	if err != nil {
		return service.Spec{}, err
	}
	exe, err := osExecutable()
	if err != nil {
		return service.Spec{}, fmt.Errorf("find this program's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return service.Spec{}, invalid("this program runs from a temporary `go run` build (%s): build or install runner-manager first (go install ./frontends/cli/cmd/runner-manager) and run its service install", exe)
	}
	spec := service.Spec{Executable: exe, User: user, RunAs: runAs, DataDir: cfg.DataDir}
	spec.ConfigPath, err = a.ConfigPath()
	if err != nil {
		return service.Spec{}, err
	}
	if !user {
		if a.cli.Config == "" {
			spec.ConfigPath = systemConfigPath
		}
		if cfg.Origins["data_dir"].Kind == config.FromDefault {
			spec.DataDir = systemDataDir
		}
	}
	spec.EnvFile = envFile
	if spec.EnvFile == "" {
		spec.EnvFile = filepath.Join(filepath.Dir(spec.ConfigPath), "env")
	}
	return spec, nil
}

// Run writes (or prints) the service file.
func (c *ServiceInstallCmd) Run(ctx context.Context, a *App) error {
	spec, err := a.serviceSpec(c.User, c.RunAs, c.EnvFile)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	in, err := service.For(runtime.GOOS, spec, home, os.Getenv("XDG_CONFIG_HOME"))
	if err != nil {
		return err
	}
	if c.Print {
		_, err := fmt.Fprint(a.Stdout, in.Content)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(in.Path), 0o755); err != nil {
		return serviceWriteErr(in.Path, err, c.User)
	}
	if err := writeFileAtomic(in.Path, []byte(in.Content), 0o644); err != nil {
		return serviceWriteErr(in.Path, err, c.User)
	}
	a.printf("wrote %s\n", in.Path)
	if runtime.GOOS == "linux" {
		a.printf("Put the token in %s (chmod 600) as GITHUB_TOKEN=... (or the variable token_env names).\n", spec.EnvFile)
	}
	if _, err := os.Stat(spec.ConfigPath); errors.Is(err, fs.ErrNotExist) {
		a.printf("%s does not exist yet: runner-manager --config %s init\n", spec.ConfigPath, spec.ConfigPath)
	}
	a.printf("Start it with:\n")
	for _, cmd := range in.Start {
		a.printf("  %s\n", cmd)
	}
	return nil
}

func serviceWriteErr(path string, err error, user bool) error {
	if errors.Is(err, fs.ErrPermission) && !user {
		return fmt.Errorf("write %s: %w: a system service needs root (sudo), or install a per-user one with --user", path, err)
	}
	return fmt.Errorf("write %s: %w", path, err)
}

// ServiceUninstallCmd removes the service file.
type ServiceUninstallCmd struct {
	serviceFlags
}

// Run removes the service file.
func (c *ServiceUninstallCmd) Run(ctx context.Context, a *App) error {
	home, _ := os.UserHomeDir()
	// The file's place does not depend on the paths inside it.
	spec := service.Spec{Executable: "/x", ConfigPath: "/x", DataDir: "/x", User: c.User}
	in, err := service.For(runtime.GOOS, spec, home, os.Getenv("XDG_CONFIG_HOME"))
	if err != nil {
		return err
	}
	if err := os.Remove(in.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no service file at %s: nothing to remove", in.Path)
		}
		return serviceWriteErr(in.Path, err, c.User)
	}
	a.printf("removed %s\nIf it was running, stop it with:\n", in.Path)
	for _, cmd := range in.Stop {
		a.printf("  %s\n", cmd)
	}
	return nil
}
