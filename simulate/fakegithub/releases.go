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

// SetRunnerReleaseProgram makes the latest release's packages carry the
// listener program at path (BuildRunner's bin/Runner.Listener), reporting
// the release's version, so that installing the release installs a fake
// runner of that version. Without it, a release's listener is a stand-in
// that exits 1 (a release whose runner fails at once).
func (s *Server) SetRunnerReleaseProgram(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseProgram = path
}

// BreakRunnerRelease makes the release of version announce checksums its
// packages do not have (a corrupted download, as the installer sees it).
func (s *Server) BreakRunnerRelease(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.badRelease == nil {
		s.badRelease = map[string]bool{}
	}
	s.badRelease[version] = true
}

// releaseDownloads are the packages of the latest release.
func (s *Server) releaseDownloads() (string, []download) {
	s.mu.Lock()
	v := cmp.Or(s.latestRelease, s.cfg.downloadsVersion)
	prog := s.releaseProgram
	bad := s.badRelease[v]
	s.mu.Unlock()
	ds := buildDownloads(s.hs.URL, v, prog)
	if bad {
		for i := range ds {
			ds[i].announced = strings.Repeat("0", len(ds[i].sha256))
		}
	}
	return v, ds
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
		sum := cmp.Or(d.announced, d.sha256)
		body.WriteString("- " + d.filename + " <!-- BEGIN SHA " + platform + " -->" + sum + "<!-- END SHA " + platform + " -->\n")
		assets = append(assets, map[string]any{
			"id": i + 1, "name": d.filename, "size": len(d.content), "state": "uploaded",
			"browser_download_url": d.url, "digest": "sha256:" + sum,
		})
	}
	return etagReply(c, http.StatusOK, map[string]any{
		"id": 1, "tag_name": "v" + v, "name": "v" + v, "draft": false, "prerelease": false,
		"body": body.String(), "assets": assets,
	}, nil)
}
