package runnerpkg

import (
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// PickDownload returns the package for Go's goos/goarch (the runner
// names them linux/osx/win and x64/arm64/arm).
func PickDownload(list []rm.RunnerDownload, goos, goarch string) (rm.RunnerDownload, error) {
	os, okOS := map[string]string{"linux": "linux", "darwin": "osx", "windows": "win"}[goos]
	arch, okArch := map[string]string{"amd64": "x64", "arm64": "arm64", "arm": "arm"}[goarch]
	if !okOS || !okArch {
		return rm.RunnerDownload{}, fmt.Errorf("GitHub publishes no runner for %s/%s (only linux, darwin and windows on amd64, arm64, arm)", goos, goarch)
	}
	var offered []string
	for _, d := range list {
		if strings.EqualFold(d.OS, os) && strings.EqualFold(d.Arch, arch) {
			return d, nil
		}
		offered = append(offered, d.OS+"-"+d.Arch)
	}
	return rm.RunnerDownload{}, fmt.Errorf("no runner download for %s/%s (%s-%s); GitHub offers: %s", goos, goarch, os, arch, strings.Join(offered, ", "))
}
