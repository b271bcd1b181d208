package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform/service"
)

// Windows: `service install` registers the program with the Service
// Control Manager (platform/service InstallWindows), which starts it as
// `runner-manager --config … --data-dir … run`; Main then serves the SCM.

// runAsWindowsService runs the program under the SCM when the SCM
// started it: ok false otherwise (and everywhere but Windows).
func runAsWindowsService() (code int, ok bool) {
	is, err := service.IsWindowsService()
	if err != nil || !is {
		return 0, false
	}
	code = ExitOK
	err = service.RunWindows(service.Name, func(ctx context.Context) error {
		out := serviceLog(os.Args[1:])
		defer out.Close()
		code = Run(ctx, os.Args[1:], Streams{Stdout: out, Stderr: out})
		if code != ExitOK {
			return fmt.Errorf("exit status %d", code)
		}
		return nil
	})
	if err != nil && code == ExitOK {
		code = ExitFailure
	}
	return code, true
}

// serviceLog is where a Windows service's output goes (it has no
// console): the daemon log of the data directory its arguments name.
func serviceLog(args []string) io.WriteCloser {
	for i, a := range args {
		dir, ok := strings.CutPrefix(a, "--data-dir=")
		if !ok && a == "--data-dir" && i+1 < len(args) {
			dir, ok = args[i+1], true
		}
		if ok {
			path := datadir.New(dir).DaemonLog()
			if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				return f
			}
		}
	}
	return nopCloser{io.Discard}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// installWindowsService registers and starts the service with the SCM.
func (a *App) installWindowsService(c *ServiceInstallCmd) error {
	if c.User {
		return fmt.Errorf("%w: a Windows service runs for the machine from boot; --user is for systemd and launchd", rm.ErrInvalid)
	}
	if c.RunAs != "" {
		return fmt.Errorf("%w: the Windows service runs as LocalSystem; --run-as is for systemd and launchd", rm.ErrInvalid)
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	exe, err := osExecutable()
	if err != nil {
		return fmt.Errorf("find this program's path: %w", err)
	}
	spec := service.Spec{Executable: exe, ConfigPath: filepath.Join(service.WindowsDataDir, "config.toml"), DataDir: service.WindowsDataDir}
	if a.cli.Config != "" {
		if spec.ConfigPath, err = a.ConfigPath(); err != nil {
			return err
		}
	}
	if cfg.Origins["data_dir"].Kind != configfile.FromDefault {
		spec.DataDir = cfg.DataDir
	}
	if c.Print {
		a.printf("sc.exe create %s start= auto binPath= \"\\\"%s\\\" %s\"\n", service.Name, spec.Executable, strings.Join(service.WindowsArgs(spec), " "))
		return nil
	}
	if err := service.InstallWindows(service.Name, spec); err != nil {
		return err
	}
	a.printf("installed and started the service %s (at boot, as LocalSystem; restarted 5 s after a failure)\n", service.Name)
	a.printf("its data directory %s is readable by LocalSystem and Administrators alone; configuration: %s\n", spec.DataDir, spec.ConfigPath)
	return nil
}
