package runnermanager

import (
	"fmt"
	"strings"
)

// RunnerDownload is one package of the runner (actions/runner) as its
// publisher offers it: GitHub's runner-downloads list or a release's
// assets. The runner's own names for systems and architectures are in OS
// and Arch (linux, osx, win; x64, arm64, arm).
type RunnerDownload struct {
	OS, Arch, URL, Filename, SHA256 string
}

// PickRunnerDownload returns the package for Go's goos/goarch (the runner
// names them linux/osx/win and x64/arm64/arm).
func PickRunnerDownload(list []RunnerDownload, goos, goarch string) (RunnerDownload, error) {
	os, okOS := map[string]string{"linux": "linux", "darwin": "osx", "windows": "win"}[goos]
	arch, okArch := map[string]string{"amd64": "x64", "arm64": "arm64", "arm": "arm"}[goarch]
	if !okOS || !okArch {
		return RunnerDownload{}, fmt.Errorf("GitHub publishes no runner for %s/%s (only linux, darwin and windows on amd64, arm64, arm)", goos, goarch)
	}
	var offered []string
	for _, d := range list {
		if strings.EqualFold(d.OS, os) && strings.EqualFold(d.Arch, arch) {
			return d, nil
		}
		offered = append(offered, d.OS+"-"+d.Arch)
	}
	return RunnerDownload{}, fmt.Errorf("no runner download for %s/%s (%s-%s); GitHub offers: %s", goos, goarch, os, arch, strings.Join(offered, ", "))
}
