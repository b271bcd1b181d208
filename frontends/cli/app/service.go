package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"runtime"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/credstore"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform/service"
)

// ServiceCmd groups the service commands.
type ServiceCmd struct {
	Install   ServiceInstallCmd   `cmd:"" help:"Write a systemd unit (Linux) or launchd property list (macOS) that runs the daemon, and start it; on Windows, register a Windows service."`
	Uninstall ServiceUninstallCmd `cmd:"" help:"Remove the service file (once the service is disabled: it says how)."`
	Status    ServiceStatusCmd    `cmd:"" help:"Show the service: its state, how it starts, its program (and whether it was replaced since it started), the daemon's last answer from GitHub."`
}

// Help is the long help of service.
func (c *ServiceCmd) Help() string {
	return `The service runs "runner-manager run" with RUNNER_MANAGER_CONFIG and
RUNNER_MANAGER_DATA_DIR set. It never holds a secret: with systemd, the
credentials "runner-manager auth login" kept reach the daemon through
LoadCredential= (run auth login before service install), or the token goes in
an environment file (mode 0600) the unit reads; with launchd the daemon reads
the keychain item auth login wrote, or use token_file in the configuration.

A system service (the default) uses /etc/runner-manager/config.toml and
/var/lib/runner-manager unless --config or --data-dir say otherwise; a --user
service uses your own configuration and data directory.

On Windows (as an administrator) install registers a service with the
Service Control Manager, started at boot as LocalSystem, with its data
directory C:\rm (short, for jobs' long paths; readable by LocalSystem and
Administrators alone) and C:\rm\config.toml.`
}

// serviceFlags are shared by install and uninstall.
type serviceFlags struct {
	User bool `help:"A per-user service (systemctl --user, a LaunchAgent) instead of a system one."`
}

// ServiceInstallCmd writes the service file.
type ServiceInstallCmd struct {
	serviceFlags
	Print   bool   `help:"Print the file instead of writing it."`
	NoStart bool   `help:"Write the file but do not start the service (default: enable and start it once the configuration exists)."`
	RunAs   string `help:"The account a system service runs as (recommended: a dedicated one, not root)." placeholder:"USER"`
	EnvFile string `help:"Where the token goes for systemd (default: env beside the configuration file)." placeholder:"FILE"`
}

// osExecutable finds this program (tests replace it).
var osExecutable = os.Executable

// hostOS is the system service files are written for (tests replace it).
var hostOS = runtime.GOOS

func (a *App) serviceSpec(user bool, runAs, envFile string) (service.Spec, error) {
	cfg, err := a.Config()
	if err != nil {
		return service.Spec{}, err
	}
	exe, err := osExecutable()
	if err != nil {
		return service.Spec{}, fmt.Errorf("find this program's path: %w", err)
	}
	if exe, err = service.Executable(exe); err != nil {
		return service.Spec{}, err
	}
	spec := service.Spec{Executable: exe, User: user, RunAs: runAs, DataDir: cfg.DataDir, EnvFile: envFile}
	if g := cfg.GitHub; !g.UsesApp() && g.TokenFile == "" {
		spec.TokenEnv = cmp.Or(g.TokenEnv, configfile.DefaultTokenEnv)
	}
	if spec.ConfigPath, err = a.ConfigPath(); err != nil {
		return service.Spec{}, err
	}
	spec = spec.WithDefaults(a.cli.Config != "", cfg.Origins["data_dir"].Kind != configfile.FromDefault)
	if spec.TokenEnv != "" && runtime.GOOS == "linux" {
		spec.Credential = keptCredential(spec.DataDir)
	}
	return spec, nil
}

// Run writes (or prints) the service file.
func (c *ServiceInstallCmd) Run(ctx context.Context, a *App) error {
	if runtime.GOOS == "windows" {
		return a.installWindowsService(c)
	}
	spec, err := a.serviceSpec(c.User, c.RunAs, c.EnvFile)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	in, err := service.For(hostOS, spec, home, os.Getenv("XDG_CONFIG_HOME"))
	if err != nil {
		return err
	}
	if c.Print {
		_, err := fmt.Fprint(a.Stdout, in.Content)
		return err
	}
	if err := in.Write(c.User); err != nil {
		return err
	}
	a.printf("wrote %s\n", in.Path)
	if runtime.GOOS == "linux" {
		cfg, err := a.Config()
		if err != nil {
			return err
		}
		a.printf("%s\n", credentialsHint(cfg.GitHub, spec.EnvFile, spec.Credential))
	}
	_, statErr := os.Stat(spec.ConfigPath)
	if errors.Is(statErr, fs.ErrNotExist) {
		a.printf("%s does not exist yet: runner-manager --config %s init\n", spec.ConfigPath, spec.ConfigPath)
	}
	if c.NoStart || statErr != nil {
		a.printf("Start it with:\n")
		for _, cmd := range in.Start {
			a.printf("  %s\n", cmd)
		}
	} else if err := a.startService(ctx, in, c.User); err != nil {
		return err
	}
	if hint := service.LingerHint(runtime.GOOS, c.User, currentUsername(), lingering); hint != "" {
		a.printf("\n%s\n", hint)
	}
	return nil
}

// keptCredential is the file in which `auth login` kept GitHub's
// credentials for dataDir on Linux, "" when there is none.
func keptCredential(dataDir string) string {
	p := credstore.File{Dir: datadir.New(dataDir).Credentials()}.Path(credstore.GitHub)
	if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

// credentialsHint says where the service finds GitHub's credentials, as
// the configuration reads them (configfile.GitHub.Credentials): the App's key
// file, else the token file, else the variable token_env names, which the
// unit reads from envFile.
func credentialsHint(g configfile.GitHub, envFile, kept string) string {
	switch {
	case g.UsesApp():
		return fmt.Sprintf("The GitHub App's key is read from %s (private_key_file): the service's user must be able to read it, and no one else (chmod 600).", g.PrivateKeyFile)
	case g.TokenFile != "":
		return fmt.Sprintf("The token is read from %s (token_file): the service's user must be able to read it, and no one else (chmod 600).", g.TokenFile)
	}
	env := g.TokenEnv
	if env == "" {
		env = configfile.DefaultTokenEnv
	}
	if kept != "" {
		return fmt.Sprintf("The unit loads the credentials `runner-manager auth login` kept in %s (LoadCredential=); %s=... in %s would win over them.", kept, env, envFile)
	}
	return fmt.Sprintf("Keep the token with `runner-manager auth login` (then run service install again), or put it in %s (chmod 600) as %s=... (the variable token_env names).", envFile, env)
}

// lingering tells whether systemd keeps a user's services running without
// a login (tests replace it).
var lingering = service.Lingering

// currentUsername is this process's user's login name, "" if unknown.
func currentUsername() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return datadir.WriteFileAtomic(path, data, perm)
}

// ServiceUninstallCmd removes the service file.
type ServiceUninstallCmd struct {
	serviceFlags
}

// Help is the long help of service uninstall.
func (c *ServiceUninstallCmd) Help() string {
	return `Disable the service first (systemctl [--user] disable --now runner-manager,
or launchctl bootout): a systemd unit that is still enabled is not removed,
and the command says what to run. Once the file is gone, it says how to stop
what may still run and make the service manager forget it.`
}

// Run removes the service file.
func (c *ServiceUninstallCmd) Run(ctx context.Context, a *App) error {
	if runtime.GOOS == "windows" {
		if err := service.RemoveWindows(service.Name); err != nil {
			return err
		}
		a.printf("stopped and removed the service %s\n", service.Name)
		return nil
	}
	home, _ := os.UserHomeDir()
	in, err := service.Remove(hostOS, c.User, home, os.Getenv("XDG_CONFIG_HOME"))
	if err != nil {
		return err
	}
	a.printf("removed %s\nIf it still runs, stop it, and make the service manager forget it:\n", in.Path)
	for _, cmd := range in.Unload {
		a.printf("  %s\n", cmd)
	}
	return nil
}
