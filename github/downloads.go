package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v88/github"
	rm "github.com/runner-manager/runner-manager"
)

// RunnerDownloads lists the runner packages GitHub offers to scope.
func (c *Client) RunnerDownloads(ctx context.Context, scope rm.Scope) ([]rm.RunnerDownload, error) {
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
	out := make([]rm.RunnerDownload, 0, len(list))
	for _, d := range list {
		out = append(out, rm.RunnerDownload{
			OS: d.GetOS(), Arch: d.GetArchitecture(), URL: d.GetDownloadURL(),
			Filename: d.GetFilename(), SHA256: d.GetSHA256Checksum(),
		})
	}
	return out, nil
}
