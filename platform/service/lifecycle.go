package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LingerDir is where systemd-logind marks the users whose services run
// without a session of theirs (loginctl enable-linger USER).
const LingerDir = "/var/lib/systemd/linger"

// Lingering reports whether systemd keeps username's user services
// running without a session: from boot, and after they log out.
func Lingering(username string) bool {
	_, err := os.Stat(filepath.Join(LingerDir, username))
	return err == nil
}

// LingerHint is what to tell a person who installs a per-user service on
// goos (user) as username, whose lingering is told by lingering: on Linux,
// a user service of a user systemd does not linger for starts only at
// their login and stops when they log out. "" when there is nothing to say.
func LingerHint(goos string, user bool, username string, lingering func(string) bool) string {
	if goos != "linux" || !user || username == "" || lingering(username) {
		return ""
	}
	return fmt.Sprintf("systemd runs %s's user services only while %s is logged in: the runners stop at logout and start again only at the next login.\n"+
		"To run it from boot, without a login, let it linger:\n  sudo loginctl enable-linger %s", username, username, username)
}

// EnabledError: a service file was not removed because the service is
// enabled (systemd links it into a target's .wants directory): removed
// first, it would stay enabled, and systemctl could no longer disable it
// by name.
type EnabledError struct {
	Path  string
	Links []string
	// Disable are the commands that stop and disable it.
	Disable []string
}

func (e *EnabledError) Error() string {
	return fmt.Sprintf("%s is enabled (%s): disable and stop it first, then run `runner-manager service uninstall` again:\n  %s",
		filepath.Base(e.Path), strings.Join(e.Links, ", "), strings.Join(e.Disable, "\n  "))
}

// enabledLinks are the links to the unit at path in the .wants (and
// .requires) directories beside it, where `systemctl enable` puts them.
func enabledLinks(path string) []string {
	var out []string
	for _, pattern := range []string{"*.wants", "*.requires"} {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(path), pattern))
		for _, d := range dirs {
			link := filepath.Join(d, filepath.Base(path))
			if _, err := os.Lstat(link); err == nil {
				out = append(out, link)
			}
		}
	}
	return out
}
