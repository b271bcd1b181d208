package github

import (
	"context"
	"regexp"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// RunnerReleaseRepo is the repository whose releases are the runner's.
const RunnerReleaseRepo = "actions/runner"

// runnerAsset names a runner package: actions-runner-<os>-<arch>-<version>.
var runnerAsset = regexp.MustCompile(`^actions-runner-(linux|osx|win)-(x64|arm64|arm)-(\d+\.\d+\.\d+)\.(tar\.gz|zip)$`)

// LatestRunnerRelease returns the newest release of actions/runner: its
// version and its packages, each with the SHA-256 the release gives (the
// asset's digest, else the checksum the release notes carry between
// <!-- BEGIN SHA os-arch --> markers; "" when it gives none). It is newer
// than what RunnerDownloads offers while GitHub rolls a release out.
func (c *Client) LatestRunnerRelease(ctx context.Context) (string, []rm.RunnerDownload, error) {
	owner, repo, _ := strings.Cut(RunnerReleaseRepo, "/")
	rel, _, err := c.gh.Repositories.GetLatestRelease(ctx, owner, repo)
	if err != nil {
		scope, _ := rm.Repository(RunnerReleaseRepo)
		return "", nil, restError(err, "read the latest runner release of "+RunnerReleaseRepo, scope)
	}
	version := strings.TrimPrefix(rel.GetTagName(), "v")
	var out []rm.RunnerDownload
	for _, a := range rel.Assets {
		m := runnerAsset.FindStringSubmatch(a.GetName())
		if m == nil || m[3] != version {
			continue
		}
		sum, ok := strings.CutPrefix(a.GetDigest(), "sha256:")
		if !ok {
			sum = releaseNoteSHA(rel.GetBody(), m[1]+"-"+m[2])
		}
		out = append(out, rm.RunnerDownload{OS: m[1], Arch: m[2], URL: a.GetBrowserDownloadURL(), Filename: a.GetName(), SHA256: strings.ToLower(sum)})
	}
	return version, out, nil
}

// releaseNoteSHA finds the checksum of platform (linux-x64) in a runner
// release's notes: <!-- BEGIN SHA linux-x64 -->hex<!-- END SHA linux-x64 -->.
func releaseNoteSHA(body, platform string) string {
	begin, end := "<!-- BEGIN SHA "+platform+" -->", "<!-- END SHA "+platform+" -->"
	_, rest, ok := strings.Cut(body, begin)
	if !ok {
		return ""
	}
	sum, _, ok := strings.Cut(rest, end)
	if !ok {
		return ""
	}
	return strings.TrimSpace(sum)
}
