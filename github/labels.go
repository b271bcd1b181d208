package github

import (
	"slices"
	"strings"
)

// MatchLabels reports whether a job with runs-on labels jobLabels can run
// on a runner with labels runnerLabels, by GitHub's rule: "self-hosted" is
// ignored, every other job label must be one of the runner's (without
// case), and a job without labels matches nothing.
func MatchLabels(jobLabels, runnerLabels []string) bool {
	if len(jobLabels) == 0 {
		return false
	}
	for _, l := range jobLabels {
		if strings.EqualFold(l, "self-hosted") {
			continue
		}
		if !slices.ContainsFunc(runnerLabels, func(r string) bool { return strings.EqualFold(r, l) }) {
			return false
		}
	}
	return true
}

// OSLabel is the label GitHub gives runners of goos: Linux, macOS, Windows.
func OSLabel(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return ""
}

// ArchLabel is the label GitHub gives runners of goarch: X64, ARM64, ARM, X86.
func ArchLabel(goarch string) string {
	switch goarch {
	case "amd64":
		return "X64"
	case "arm64":
		return "ARM64"
	case "arm":
		return "ARM"
	case "386":
		return "X86"
	}
	return ""
}

// ImplicitLabels are the labels every runner of goos/goarch gets beside a
// policy's own: self-hosted, the OS and the architecture (self-hosted,
// Linux, X64 on linux/amd64). The official runner adds them when it is
// configured (actions/runner v2.316.1-395-g258d6c85,
// src/Runner.Listener/Configuration/ConfigurationManager.cs:693-695);
// classic-mode runners here register through generate-jitconfig, not
// config.sh, and the manager adds the same three to the labels it sends
// (runnerLabels). A job whose runs-on labels are all among them runs on
// any classic runner of this host.
func ImplicitLabels(goos, goarch string) []string {
	var out []string
	for _, l := range []string{"self-hosted", OSLabel(goos), ArchLabel(goarch)} {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// runnerLabels is the label set of a classic runner: the target's and
// extra labels, plus self-hosted and the OS/arch labels unless
// noDefaults, without duplicates (case-insensitive), in order.
func runnerLabels(target, extra []string, goos, goarch string, noDefaults bool) []string {
	var all []string
	add := func(l string) {
		if l != "" && !slices.ContainsFunc(all, func(x string) bool { return strings.EqualFold(x, l) }) {
			all = append(all, l)
		}
	}
	if !noDefaults {
		for _, l := range ImplicitLabels(goos, goarch) {
			add(l)
		}
	}
	for _, l := range target {
		add(l)
	}
	for _, l := range extra {
		add(l)
	}
	return all
}

// OnlyImplicit reports whether every label of a classic label set is an
// implicit one of goos/goarch (without case): its runners then serve every
// job of the scope that asks for a self-hosted runner of that OS and
// architecture, such as runs-on: self-hosted, or [self-hosted, linux].
func OnlyImplicit(labels []string, goos, goarch string) bool {
	implicit := ImplicitLabels(goos, goarch)
	for _, l := range labels {
		if !slices.ContainsFunc(implicit, func(i string) bool { return strings.EqualFold(i, l) }) {
			return false
		}
	}
	return len(labels) > 0
}
