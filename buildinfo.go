package runnermanager

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// Build is what the Go toolchain stamped into the running program: the
// module version and the VCS revision it was built from. The programs'
// --version, the daemon's start log line and the build_info metric print
// it, so a report names the exact code that ran.
type Build struct {
	// Version is the main module's version ("v1.2.3"), or "dev" for a
	// build from a work tree (the toolchain says "(devel)").
	Version string
	// Commit is the VCS revision (vcs.revision), empty when not stamped
	// (go run, go test, -buildvcs=false).
	Commit string
	// Time is the commit's time (vcs.time); zero when not stamped.
	Time time.Time
	// Modified is true when the work tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the program.
	GoVersion string
}

// stampedVersion is the version a release build stamps in at link time
// (internal/mkrelease: -ldflags "-X github.com/runner-manager/runner-manager.stampedVersion=v1.2.3"):
// a release is built from a tag the toolchain may not see (a shallow
// clone, a tarball), and both programs and the daemon must say the same.
var stampedVersion string

// ReadBuild is the running program's Build, from debug.ReadBuildInfo, with
// the version a release build stamped in, if any, in place of the module's.
func ReadBuild() Build {
	b := BuildOf(debug.ReadBuildInfo())
	if stampedVersion != "" {
		b.Version = stampedVersion
	}
	return b
}

// BuildOf is the Build that bi describes; ok false (a program built
// without module support) gives version "dev" and nothing else.
func BuildOf(bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: "dev"}
	if !ok || bi == nil {
		return b
	}
	b.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				b.Time = t.UTC()
			}
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form --version prints:
// "v1.2.3 (commit 0123456789ab, 2026-01-02T15:04:05Z, modified, go1.26.0)";
// the parenthesis lists only what is known.
func (b Build) String() string {
	var parts []string
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		parts = append(parts, "commit "+c)
	}
	if !b.Time.IsZero() {
		parts = append(parts, b.Time.Format(time.RFC3339))
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	if b.GoVersion != "" {
		parts = append(parts, b.GoVersion)
	}
	if len(parts) == 0 {
		return b.Version
	}
	return fmt.Sprintf("%s (%s)", b.Version, strings.Join(parts, ", "))
}
