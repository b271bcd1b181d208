package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v88/github"
	rm "github.com/runner-manager/runner-manager"
)

// RunnerDownloads lists the runner packages GitHub offers to scope.
func (c *Client) RunnerDownloads(ctx context.Context, scope rm.Scope) ([]Download, error) {
	var (
		list []*gh.RunnerApplicationDownload
		err  error
	)
	switch scope.Kind {
	case rm.ScopeRepository:
		owner, repo, _ := strings.Cut(scope.Name, "/")
		list, _, err = c.gh.Actions.ListRunnerApplicationDownloads(ctx, owner, repo)
	case rm.ScopeOrganization:
		list, _, err = c.gh.Actions.ListOrganizationRunnerApplicationDownloads(ctx, scope.Name)
	case rm.ScopeEnterprise:
		list, _, err = c.gh.Enterprise.ListRunnerApplicationDownloads(ctx, scope.Name)
	default:
		return nil, fmt.Errorf("list runner downloads: scope %q has no kind", scope.Name)
	}
	if err != nil {
		return nil, restError(err, "list runner downloads of "+scope.String(), scope)
	}
	out := make([]Download, 0, len(list))
	for _, d := range list {
		out = append(out, Download{
			OS: d.GetOS(), Arch: d.GetArchitecture(), URL: d.GetDownloadURL(),
			Filename: d.GetFilename(), SHA256: d.GetSHA256Checksum(),
		})
	}
	return out, nil
}

// PickDownload returns the package for Go's goos/goarch (GitHub names
// them linux/osx/win and x64/arm64/arm).
func PickDownload(list []Download, goos, goarch string) (Download, error) {
	os, okOS := map[string]string{"linux": "linux", "darwin": "osx", "windows": "win"}[goos]
	arch, okArch := map[string]string{"amd64": "x64", "arm64": "arm64", "arm": "arm"}[goarch]
	if !okOS || !okArch {
		return Download{}, fmt.Errorf("GitHub publishes no runner for %s/%s (only linux, darwin and windows on amd64, arm64, arm)", goos, goarch)
	}
	var offered []string
	for _, d := range list {
		if strings.EqualFold(d.OS, os) && strings.EqualFold(d.Arch, arch) {
			return d, nil
		}
		offered = append(offered, d.OS+"-"+d.Arch)
	}
	return Download{}, fmt.Errorf("no runner download for %s/%s (%s-%s); GitHub offers: %s", goos, goarch, os, arch, strings.Join(offered, ", "))
}
