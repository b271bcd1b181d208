package fakegithub

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// download is one runner package the fake offers.
type download struct {
	os, arch, filename, url, sha256 string
	content                         []byte
	// announced, if set, is the checksum the release names instead of
	// sha256 (BreakRunnerRelease).
	announced string
}

// packageFile is one file of the fake runner package.
type packageFile struct {
	name string
	mode int64
	body string
}

// packageFiles lays the package out like the real runner's: bin/ with the
// listener, the scripts at the top, externals/. The listener in it is a
// stand-in script that exits 1 (the fake runner program is built by
// BuildRunner), unless program holds a listener program: then bin/ holds
// it, and the fake runner's version file naming version.
func packageFiles(windows bool, version string, program []byte) []packageFile {
	if len(program) > 0 && !windows {
		files := packageFiles(false, version, nil)
		files[0] = packageFile{"bin/Runner.Listener", 0o755, string(program)}
		return append(files, packageFile{"bin/" + runnerproto.VersionFile, 0o644, version + "\n"})
	}
	if windows {
		return []packageFile{
			{"bin/Runner.Listener.exe", 0o755, "stand-in for the runner listener " + version + "\r\n"},
			{"bin/Runner.Worker.exe", 0o755, "stand-in for the runner worker\r\n"},
			{"config.cmd", 0o755, "@echo off\r\necho configure with a JIT config instead\r\nexit /b 1\r\n"},
			{"run.cmd", 0o755, "@echo off\r\n\"%~dp0bin\\Runner.Listener.exe\" run %*\r\n"},
			{"externals/node20/bin/node.exe", 0o755, "stand-in\r\n"},
		}
	}
	return []packageFile{
		{"bin/Runner.Listener", 0o755, "#!/bin/sh\necho 'stand-in for the runner listener " + version + ": install the fake runner program here' >&2\nexit 1\n"},
		{"bin/Runner.Worker", 0o755, "#!/bin/sh\nexit 1\n"},
		{"config.sh", 0o755, "#!/bin/sh\necho 'configure with a JIT config instead' >&2\nexit 1\n"},
		{"run.sh", 0o755, "#!/bin/sh\nexec \"$(dirname \"$0\")/bin/Runner.Listener\" run \"$@\"\n"},
		{"env.sh", 0o755, "#!/bin/sh\n"},
		{"externals/node20/bin/node", 0o755, "#!/bin/sh\nexit 0\n"},
	}
}

var packageStamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func tarball(files []packageFile) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := dirOf(f.name); d != "" && !dirs[d]; d = dirOf(d) {
			dirs[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: packageStamp})
	}
	for _, f := range files {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: packageStamp})
		_, _ = tw.Write([]byte(f.body))
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func zipball(files []packageFile) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: packageStamp}
		h.SetMode(0o755)
		w, _ := zw.CreateHeader(h)
		_, _ = w.Write([]byte(f.body))
	}
	_ = zw.Close()
	return buf.Bytes()
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}

var (
	packagesMu sync.Mutex
	packages   = map[[2]string][2][]byte{} // version, program → tar.gz, zip
)

// buildDownloads makes (once per version, listener program and process)
// the packages the fake offers, for every OS and architecture GitHub
// offers; program is the path of the listener program the packages carry
// ("": a stand-in that exits 1).
func buildDownloads(baseURL, version, program string) []download {
	packagesMu.Lock()
	key := [2]string{version, program}
	p, ok := packages[key]
	if !ok {
		var prog []byte
		if program != "" {
			prog, _ = os.ReadFile(program)
		}
		p = [2][]byte{tarball(packageFiles(false, version, prog)), zipball(packageFiles(true, version, prog))}
		packages[key] = p
	}
	packagesMu.Unlock()
	var out []download
	for _, t := range []struct{ os, arch string }{
		{"linux", "x64"}, {"linux", "arm"}, {"linux", "arm64"}, {"osx", "x64"}, {"osx", "arm64"}, {"win", "x64"}, {"win", "arm64"},
	} {
		content, ext := p[0], ".tar.gz"
		if t.os == "win" {
			content, ext = p[1], ".zip"
		}
		sum := sha256.Sum256(content)
		name := "actions-runner-" + t.os + "-" + t.arch + "-" + version + ext
		out = append(out, download{
			os: t.os, arch: t.arch, filename: name, url: baseURL + "/_downloads/" + name,
			sha256: hex.EncodeToString(sum[:]), content: content,
		})
	}
	return out
}

func (s *Server) download(c *call) reply {
	name := c.r.PathValue("file")
	_, released := s.releaseDownloads()
	for _, d := range append(s.downloads, released...) {
		if d.filename == name {
			ct := "application/gzip"
			if d.os == "win" {
				ct = "application/zip"
			}
			return reply{status: http.StatusOK, raw: d.content, ctype: ct}
		}
	}
	return ghError(http.StatusNotFound, "Not Found")
}
