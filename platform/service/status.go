package service

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// State is what the service manager says of the service.
type State string

// The states `service status` tells apart.
const (
	NotInstalled   State = "not installed"
	Stopped        State = "stopped"
	Starting       State = "starting"
	Running        State = "running"
	Stopping       State = "stopping"
	RestartBackoff State = "restart backoff" // exited, to be started again after a delay
	Failed         State = "failed"
	Unknown        State = "unknown"
)

// Status is the service as its manager reports it.
type Status struct {
	State State
	// StartMode: "at boot" or "at login" when the manager starts it on
	// its own, "manual" when only a person does.
	StartMode string
	// Program is the executable the service runs ("" if unknown).
	Program string
	// PID of its main process, 0 when none runs.
	PID int
	// Since is when its main process started (zero if unknown).
	Since time.Time
	// Restarts counts the automatic restarts the manager made (-1 unknown).
	Restarts int
	// LastExit is how the last run ended ("" if unknown or never).
	LastExit string
}

// Stale tells whether the program on disk is newer than the running
// service (modTime, the program file's, after since, its start): it was
// replaced, and the service still runs the old one.
func (s Status) Stale(modTime time.Time) bool {
	return s.PID != 0 && !s.Since.IsZero() && modTime.After(s.Since)
}

// SystemdProperties are the properties ParseSystemd reads, for
// `systemctl show --property=`.
var SystemdProperties = []string{"LoadState", "ActiveState", "SubState", "UnitFileState", "MainPID",
	"ExecMainStartTimestamp", "ExecMainStatus", "ExecMainCode", "NRestarts", "ExecStart", "Result"}

// StatusCommand is the command whose output ParseStatus reads, for goos
// and a system (or user's: user, uid) service.
func StatusCommand(goos string, user bool, uid int) ([]string, error) {
	switch goos {
	case "linux":
		cmd := []string{"systemctl"}
		if user {
			cmd = append(cmd, "--user")
		}
		return append(cmd, "show", Name+".service", "--property="+strings.Join(SystemdProperties, ",")), nil
	case "darwin":
		domain := "system"
		if user {
			domain = fmt.Sprintf("gui/%d", uid)
		}
		return []string{"launchctl", "print", domain + "/" + Label}, nil
	}
	return nil, fmt.Errorf("service status reads systemd (Linux) and launchd (macOS), not %s", goos)
}

// ParseStatus reads StatusCommand's output for goos; user says whether it
// is a user's service (started at login rather than boot).
func ParseStatus(goos, out string, user bool) Status {
	if goos == "darwin" {
		return ParseLaunchd(out, user)
	}
	return ParseSystemd(out, user)
}

// ParseSystemd reads `systemctl show`'s KEY=VALUE lines.
func ParseSystemd(out string, user bool) Status {
	p := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			p[k] = v
		}
	}
	s := Status{Restarts: -1}
	if n, err := strconv.Atoi(p["NRestarts"]); err == nil {
		s.Restarts = n
	}
	s.PID, _ = strconv.Atoi(p["MainPID"])
	if t, err := time.Parse("Mon 2006-01-02 15:04:05 MST", p["ExecMainStartTimestamp"]); err == nil {
		s.Since = t
	}
	if i := strings.Index(p["ExecStart"], "path="); i >= 0 {
		s.Program = strings.Fields(p["ExecStart"][i+len("path="):])[0]
	}
	switch p["UnitFileState"] {
	case "enabled", "enabled-runtime", "linked", "alias":
		s.StartMode = "at boot"
		if user {
			s.StartMode = "at login"
		}
	case "":
	default:
		s.StartMode = "manual"
	}
	if code, status := p["ExecMainCode"], p["ExecMainStatus"]; code != "" && code != "0" {
		s.LastExit = systemdExit(code, status)
	}
	switch active, sub := p["ActiveState"], p["SubState"]; {
	case p["LoadState"] == "not-found":
		s.State = NotInstalled
	case sub == "auto-restart":
		s.State = RestartBackoff
	case active == "active":
		s.State = Running
	case active == "activating":
		s.State = Starting
	case active == "deactivating":
		s.State = Stopping
	case active == "failed":
		s.State = Failed
		if r := p["Result"]; r != "" && r != "success" && s.LastExit == "" {
			s.LastExit = r
		}
	case active == "inactive":
		s.State = Stopped
	default:
		s.State = Unknown
	}
	if s.State != Running && s.State != Stopping {
		s.PID = 0
	}
	return s
}

// systemdExit is ExecMainCode/ExecMainStatus said plainly: code 1 is an
// exit, 2 and 3 a signal.
func systemdExit(code, status string) string {
	switch code {
	case "1":
		return "exit status " + status
	case "2", "3":
		return "killed by signal " + status
	}
	return ""
}

// ParseLaunchd reads `launchctl print`'s output; a service launchd does
// not know ("Could not find service") is NotInstalled.
func ParseLaunchd(out string, user bool) Status {
	s := Status{Restarts: -1}
	if strings.Contains(out, "Could not find service") {
		s.State = NotInstalled
		return s
	}
	p := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	depth := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// Top-level keys only: nested dictionaries (environment,
		// endpoints) hold keys of the same names.
		if depth == 1 {
			if k, v, ok := strings.Cut(line, " = "); ok {
				p[k] = strings.TrimSuffix(v, " {")
			}
		}
		if strings.HasSuffix(line, "{") {
			depth++
		} else if line == "}" {
			depth--
		}
	}
	if len(p) == 0 {
		s.State = Unknown
		return s
	}
	s.Program = p["program"]
	s.PID, _ = strconv.Atoi(p["pid"])
	if n, err := strconv.Atoi(p["runs"]); err == nil && n > 0 {
		s.Restarts = n - 1
	}
	if e := p["last exit code"]; e != "" && e != "(never exited)" && e != "0" {
		s.LastExit = "exit status " + e
	}
	if sig := p["last terminating signal"]; sig != "" {
		s.LastExit = "killed by signal " + sig
	}
	// The property list says RunAtLoad: launchd starts it when it loads
	// the file, at boot (a daemon) or at login (an agent).
	s.StartMode = "at boot"
	if user {
		s.StartMode = "at login"
	}
	switch st := p["state"]; {
	case st == "running":
		s.State = Running
	case st == "spawn scheduled" || st == "penalty box":
		s.State = RestartBackoff
	case strings.HasPrefix(st, "spawning") || st == "xpcproxy":
		s.State = Starting
	case st == "not running" || st == "waiting":
		s.State = Stopped
		if s.LastExit != "" {
			s.State = Failed
		}
	default:
		s.State = Unknown
	}
	if s.State != Running {
		s.PID = 0
	}
	return s
}
