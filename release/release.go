// Package release owns runner-manager's release archives: their names, the
// SHA256SUMS file beside them, packing and unpacking them, fetching and
// verifying them from where releases are published, and replacing the
// running program with a verified one. internal/mkrelease builds the
// archives with it; `runner-manager update` installs them with it;
// install.sh and install.ps1 follow the same names and layout.
//
// A release is a directory of files, one archive per platform and
// SHA256SUMS:
//
//	runner-manager_1.2.3_linux_amd64.tar.gz    runner-manager, runner-manager-tui
//	runner-manager_1.2.3_linux_arm64.tar.gz
//	runner-manager_1.2.3_darwin_arm64.tar.gz
//	runner-manager_1.2.3_windows_amd64.zip     runner-manager.exe, runner-manager-tui.exe
//	SHA256SUMS                                 "<hex>  <name>" a line, as sha256sum writes
//
// Published as GitHub releases, a release's files are at
// <base>/download/v1.2.3/<file> and the newest one's at
// <base>/latest/download/<file> (GitHub redirects there), base being
// https://github.com/runner-manager/runner-manager/releases.
package release

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// DefaultBaseURL is where releases are published.
const DefaultBaseURL = "https://github.com/runner-manager/runner-manager/releases"

// ErrNotFound: a release, an archive or a file in one is not there.
var ErrNotFound = errors.New("not found")

// SumsName is the checksum file of a release.
const SumsName = "SHA256SUMS"

// Programs are the programs every archive holds (with ".exe" on Windows).
var Programs = []string{"runner-manager", "runner-manager-tui"}

// Platforms are the platforms releases are built for: the first three by
// internal/mkrelease on Linux (cgo through Debian's cross compilers), the
// macOS ones by the same program on a Mac.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"}, {"windows", "amd64"},
	{"darwin", "arm64"}, {"darwin", "amd64"},
}

// Platform is an operating system and a CPU as Go names them.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Supported tells whether releases are built for p.
func (p Platform) Supported() bool {
	for _, q := range Platforms {
		if q == p {
			return true
		}
	}
	return false
}

// Ext is the archive's extension: .zip on Windows, .tar.gz elsewhere.
func (p Platform) Ext() string {
	if p.OS == "windows" {
		return ".zip"
	}
	return ".tar.gz"
}

// Exe is program's file name on p.
func (p Platform) Exe(program string) string {
	if p.OS == "windows" {
		return program + ".exe"
	}
	return program
}

var versionRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Tag is version as a release's tag: "v1.2.3" for "1.2.3" or "v1.2.3".
// A version that is not semantic (1.2.3, with an optional -suffix) is
// rm.ErrInvalid: it would name no release.
func Tag(version string) (string, error) {
	if !versionRe.MatchString(version) {
		return "", fmt.Errorf("%w: %q is not a release version (1.2.3 or v1.2.3)", rm.ErrInvalid, version)
	}
	return "v" + strings.TrimPrefix(version, "v"), nil
}

// ArchiveName is the archive of version (a tag or not) for p:
// runner-manager_1.2.3_linux_amd64.tar.gz.
func ArchiveName(version string, p Platform) string {
	return fmt.Sprintf("runner-manager_%s_%s_%s%s", strings.TrimPrefix(version, "v"), p.OS, p.Arch, p.Ext())
}

var archiveRe = regexp.MustCompile(`^runner-manager_([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)_([a-z0-9]+)_([a-z0-9]+)\.(tar\.gz|zip)$`)

// ParseArchiveName is the tag ("v1.2.3") and platform an archive's name
// says; ok false for a name that is not an archive's.
func ParseArchiveName(name string) (tag string, p Platform, ok bool) {
	m := archiveRe.FindStringSubmatch(name)
	if m == nil {
		return "", Platform{}, false
	}
	p = Platform{m[2], m[3]}
	if p.Ext() != "."+m[4] {
		return "", Platform{}, false
	}
	return "v" + m[1], p, true
}
