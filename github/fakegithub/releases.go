package fakegithub

import (
	"cmp"
	"net/http"
	"strings"
)

// RouteLatestRunnerRelease is the runner's newest release (actions/runner's
// releases API), whose packages the fake serves beside the downloads list:
// go-github v88 repos_releases.go:131 (RepositoryRelease); REST
// repos/get-latest-release: 200.
const RouteLatestRunnerRelease = "GET /repos/actions/runner/releases/latest"

// SetLatestRunnerRelease makes the fake's newest actions/runner release
// version (default: the version the downloads list offers): a release
// newer than the offer, as while GitHub rolls one out.
func (s *Server) SetLatestRunnerRelease(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latestRelease = version
}

// releaseDownloads are the packages of the latest release.
func (s *Server) releaseDownloads() (string, []download) {
	s.mu.Lock()
	v := cmp.Or(s.latestRelease, s.cfg.downloadsVersion)
	s.mu.Unlock()
	return v, buildDownloads(s.hs.URL, v)
}

// latestRunnerRelease answers like GitHub's release of actions/runner: a
// tag vX.Y.Z, one asset per package with its sha256 digest, and the notes'
// checksum markers.
func (s *Server) latestRunnerRelease(c *call) reply {
	v, ds := s.releaseDownloads()
	var body strings.Builder
	body.WriteString("## What's Changed\n\nFake release " + v + ".\n\n## SHA-256 Checksums\n\n")
	assets := make([]map[string]any, 0, len(ds))
	for i, d := range ds {
		platform := d.os + "-" + d.arch
		body.WriteString("- " + d.filename + " <!-- BEGIN SHA " + platform + " -->" + d.sha256 + "<!-- END SHA " + platform + " -->\n")
		assets = append(assets, map[string]any{
			"id": i + 1, "name": d.filename, "size": len(d.content), "state": "uploaded",
			"browser_download_url": d.url, "digest": "sha256:" + d.sha256,
		})
	}
	return etagReply(c, http.StatusOK, map[string]any{
		"id": 1, "tag_name": "v" + v, "name": "v" + v, "draft": false, "prerelease": false,
		"body": body.String(), "assets": assets,
	}, nil)
}
