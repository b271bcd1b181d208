// Package service owns the service files that run `runner-manager run` at
// boot or login: a systemd unit on Linux and a launchd property list on
// macOS. A service file never embeds a secret: it names the configuration
// file and, for systemd, an optional environment file where the token
// lives (mode 0600).
package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// Name is the systemd unit name; Label the launchd label.
const (
	Name  = "runner-manager"
	Label = "io.github.runner-manager"
)

// Spec says what the service runs.
type Spec struct {
	// Executable is the absolute path of runner-manager.
	Executable string
	ConfigPath string
	DataDir    string
	// EnvFile is where secrets go (GITHUB_TOKEN=...), systemd only. It is
	// optional: the unit starts without it.
	EnvFile string
	// TokenEnv is the variable the configuration reads the token from
	// (its token_env), which the unit's comment tells to set in EnvFile;
	// "" when the configuration reads no token from the environment
	// (token_file, a GitHub App's key file): the comment then names none.
	TokenEnv string
	// Credential is the file `runner-manager auth login` keeps GitHub's
	// credentials in (Linux: <data>/credentials/github, root's alone for
	// a system service), which the unit hands to the daemon with
	// LoadCredential=github:FILE; "" when none is kept. systemd reads it
	// as root and gives the daemon a copy only its account reads, under
	// $CREDENTIALS_DIRECTORY: the secret is never in the unit.
	Credential string
	// User selects a per-user service (systemctl --user, a LaunchAgent)
	// rather than a system one.
	User bool
	// RunAs is the account a system service runs as; "" keeps the
	// manager's default (root for systemd, which then also needs
	// RUNNER_ALLOW_RUNASROOT: prefer a dedicated account).
	RunAs string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (s Spec) validate() error {
	paths := map[string]string{"executable": s.Executable, "config": s.ConfigPath, "data dir": s.DataDir}
	if s.Credential != "" {
		paths["credential"] = s.Credential
	}
	for name, p := range paths {
		if p == "" || !filepath.IsAbs(p) && !strings.HasPrefix(p, "/") {
			return fmt.Errorf("%w: the service needs an absolute %s path, not %q", rm.ErrInvalid, name, p)
		}
		if strings.ContainsAny(p, "\n\"\\%$") {
			return fmt.Errorf("%w: the %s path %q holds a character a service file cannot carry", rm.ErrInvalid, name, p)
		}
	}
	if s.TokenEnv != "" && !envName.MatchString(s.TokenEnv) {
		return fmt.Errorf("%w: token_env %q is not an environment variable's name (letters, digits and _, not first a digit)", rm.ErrInvalid, s.TokenEnv)
	}
	if s.RunAs != "" && s.User {
		return fmt.Errorf("%w: --run-as is for a system service; a --user service runs as you", rm.ErrInvalid)
	}
	return nil
}

var systemdTemplate = template.Must(template.New("unit").Parse(`# Written by runner-manager service install. Secrets go in the
# EnvironmentFile (mode 0600) or the file LoadCredential= names, never in
# this file.
[Unit]
Description=runner-manager: ephemeral GitHub Actions runners
Documentation=https://github.com/runner-manager/runner-manager
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart={{.Executable}} run
Environment=RUNNER_MANAGER_CONFIG={{.ConfigPath}}
Environment=RUNNER_MANAGER_DATA_DIR={{.DataDir}}
Environment=RUNNER_MANAGER_LOG_FORMAT=json
{{- if .EnvFile}}
{{- if .TokenEnv}}
# Put the token here as {{.TokenEnv}}=... (the configuration's token_env).
{{- else}}
# What the configuration reads from the environment goes here, as
# NAME=value (its GitHub credentials come from a file it names).
{{- end}}
EnvironmentFile=-{{.EnvFile}}
{{- end}}
{{- if .Credential}}
# GitHub's credentials, as runner-manager auth login keeps them: systemd
# reads the file and gives the daemon a private copy it reads as
# $CREDENTIALS_DIRECTORY/github. The unit does not start while the file is
# missing (after auth logout): write the unit again.
LoadCredential=github:{{.Credential}}
{{- end}}
{{- if .RunAs}}
User={{.RunAs}}
{{- end}}
# Runners outlive a restart of the manager (the next start re-adopts
# them), so stopping the service stops only the manager. To stop runners
# too, pause the policies first: runner-manager policy pause NAME.
KillMode=process
Restart=on-failure
RestartSec=5s
UMask=0077

[Install]
WantedBy={{if .User}}default.target{{else}}multi-user.target{{end}}
`))

// Systemd returns the unit file for spec.
func Systemd(spec Spec) (string, error) {
	if err := spec.validate(); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := systemdTemplate.Execute(&b, spec); err != nil {
		return "", err
	}
	return b.String(), nil
}

var launchdTemplate = template.Must(template.New("plist").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by runner-manager service install. Secrets never go here: set
     token_file (mode 0600) in the configuration file. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>{{x .Label}}</string>
	<key>ProgramArguments</key>
	<array>
		<string>{{x .Executable}}</string>
		<string>run</string>
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>RUNNER_MANAGER_CONFIG</key>
		<string>{{x .ConfigPath}}</string>
		<key>RUNNER_MANAGER_DATA_DIR</key>
		<string>{{x .DataDir}}</string>
		<key>RUNNER_MANAGER_LOG_FORMAT</key>
		<string>json</string>
	</dict>
{{- if .RunAs}}
	<key>UserName</key>
	<string>{{x .RunAs}}</string>
{{- end}}
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<!-- Runners outlive a restart of the manager, which re-adopts them. -->
	<key>AbandonProcessGroup</key>
	<true/>
	<key>Umask</key>
	<integer>63</integer>
	<key>StandardOutPath</key>
	<string>{{x .LogPath}}</string>
	<key>StandardErrorPath</key>
	<string>{{x .LogPath}}</string>
</dict>
</plist>
`))

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Launchd returns the property list for spec.
func Launchd(spec Spec) (string, error) {
	if err := spec.validate(); err != nil {
		return "", err
	}
	data := struct {
		Spec
		Label, LogPath string
	}{spec, Label, filepath.ToSlash(datadir.New(spec.DataDir).DaemonLog())}
	var b bytes.Buffer
	if err := launchdTemplate.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Install says where a service file goes and how to start it.
type Install struct {
	// Path of the service file.
	Path string
	// Content of the file.
	Content string
	// Start are the commands that load and start it; Stop the ones that
	// stop and disable it (run before removing the file); Unload the ones
	// that stop what still runs once the file is gone and make the service
	// manager forget it.
	Start, Stop, Unload []string
}

// For returns the service file for goos ("linux", "darwin") with its place:
// systemd units in /etc/systemd/system or, with spec.User,
// $XDG_CONFIG_HOME/systemd/user (configHome); launchd property lists in
// /Library/LaunchDaemons or ~/Library/LaunchAgents (home).
func For(goos string, spec Spec, home, configHome string) (Install, error) {
	switch goos {
	case "linux":
		content, err := Systemd(spec)
		if err != nil {
			return Install{}, err
		}
		in := Install{Content: content}
		if spec.User {
			if configHome == "" {
				configHome = filepath.Join(home, ".config")
			}
			in.Path = filepath.Join(configHome, "systemd", "user", Name+".service")
			in.Start = []string{"systemctl --user daemon-reload", "systemctl --user enable --now " + Name}
			in.Stop = []string{"systemctl --user disable --now " + Name}
			in.Unload = []string{"systemctl --user stop " + Name, "systemctl --user daemon-reload"}
		} else {
			in.Path = "/etc/systemd/system/" + Name + ".service"
			in.Start = []string{"systemctl daemon-reload", "systemctl enable --now " + Name}
			in.Stop = []string{"systemctl disable --now " + Name}
			in.Unload = []string{"systemctl stop " + Name, "systemctl daemon-reload"}
		}
		return in, nil
	case "darwin":
		content, err := Launchd(spec)
		if err != nil {
			return Install{}, err
		}
		in := Install{Content: content}
		if spec.User {
			in.Path = filepath.Join(home, "Library", "LaunchAgents", Label+".plist")
			in.Start = []string{"launchctl bootstrap gui/$(id -u) " + in.Path}
			in.Stop = []string{"launchctl bootout gui/$(id -u)/" + Label}
			in.Unload = in.Stop
		} else {
			in.Path = "/Library/LaunchDaemons/" + Label + ".plist"
			in.Start = []string{"launchctl bootstrap system " + in.Path}
			in.Stop = []string{"launchctl bootout system/" + Label}
			in.Unload = in.Stop
		}
		return in, nil
	}
	return Install{}, fmt.Errorf("service files are written for Linux (systemd) and macOS (launchd), not %s: start `runner-manager run` with your system's service manager: %w", goos, errors.ErrUnsupported)
}
