package fakegithub

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// CIJob makes a job shaped like real CI: before its work, the fake runner
// checks the repository out into its workspace, installs a toolchain into
// the runner's tool cache and the dependencies into npm's cache, each
// fetched from this server over loopback at its download rate
// (WithDownloadRate) unless the folder already holds it. Zero fields take
// the defaults noted (about 40 MB in all: four seconds at the default
// rate, a home uplink's).
type CIJob struct {
	// Commit names the revision checked out (default "c1").
	Commit string
	// Files of FileBytes each make the repository's tree (default 100 of
	// 100 KiB).
	Files     int
	FileBytes int64
	// Changed is how many of the files (the first ones) differ from one
	// commit to the next; the others are the same in every commit. A
	// checkout into a workspace holding another commit fetches only these.
	Changed int
	// Tool is the toolchain (default node 20.11.1, x64, of ToolBytes:
	// 20 MiB).
	ToolName, ToolVersion, ToolArch string
	ToolBytes                       int64
	// Packages of PackageBytes each are the dependencies a lock file
	// names (default 100 of 100 KiB); the same in every repository, as
	// the registry's packages are.
	Packages     int
	PackageBytes int64
}

// DefaultDownloadRate is how fast the content routes send: 10 MB/s, a
// home uplink's, so that a cold setup's time is its fetching, as on a
// machine of one's own.
const DefaultDownloadRate = 10_000_000

// The results a setup or a probe reports, as JobRecord carries them.
type (
	SetupReport = runnerproto.SetupReport
	PhaseReport = runnerproto.PhaseReport
	ProbeReport = runnerproto.ProbeReport
	ProbeResult = runnerproto.ProbeResult
)

func (c CIJob) withDefaults() CIJob {
	def := func(p *int64, v int64) {
		if *p <= 0 {
			*p = v
		}
	}
	if c.Commit == "" {
		c.Commit = "c1"
	}
	if c.Files <= 0 {
		c.Files = 100
	}
	def(&c.FileBytes, 100<<10)
	c.Changed = min(max(c.Changed, 0), c.Files)
	if c.ToolName == "" {
		c.ToolName = "node"
	}
	if c.ToolVersion == "" {
		c.ToolVersion = "20.11.1"
	}
	if c.ToolArch == "" {
		c.ToolArch = "x64"
	}
	def(&c.ToolBytes, 20<<20)
	if c.Packages <= 0 {
		c.Packages = 100
	}
	def(&c.PackageBytes, 100<<10)
	return c
}

// ciContent is what the content routes serve: objects by id (their size;
// their bytes are made from the id), trees by repository and commit.
type ciContent struct {
	mu      sync.Mutex
	objects map[string]int64
	trees   map[string][]runnerproto.CIObject
	tools   map[string]int64 // tool archive id → size
	served  atomic.Int64
	rate    atomic.Int64 // bytes per second; <= 0: unthrottled
}

// objectID names content: the same parts are the same bytes.
func objectID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = io.WriteString(h, p)
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ciSetup registers the content of a CI job of repo and returns what its
// runner is told. Called with s.mu held or not: ci has its own lock.
func (s *Server) ciSetup(repo string, c CIJob) *runnerproto.CISetup {
	c = c.withDefaults()
	base := s.URL() + "/_ci"
	tree := make([]runnerproto.CIObject, c.Files)
	for i := range tree {
		path := fmt.Sprintf("src/file%04d.txt", i)
		version := "base"
		if i < c.Changed {
			version = c.Commit
		}
		tree[i] = runnerproto.CIObject{Path: path, ID: objectID("file", repo, path, version, strconv.FormatInt(c.FileBytes, 10)), Size: c.FileBytes}
	}
	pkgs := make([]runnerproto.CIObject, c.Packages)
	for i := range pkgs {
		name := fmt.Sprintf("pkg%03d", i)
		pkgs[i] = runnerproto.CIObject{Path: name, ID: objectID("package", name, strconv.FormatInt(c.PackageBytes, 10)), Size: c.PackageBytes}
	}
	toolID := objectID("tool", c.ToolName, c.ToolVersion, c.ToolArch, strconv.FormatInt(c.ToolBytes, 10))
	s.ci.mu.Lock()
	defer s.ci.mu.Unlock()
	if s.ci.objects == nil {
		s.ci.objects, s.ci.trees, s.ci.tools = map[string]int64{}, map[string][]runnerproto.CIObject{}, map[string]int64{}
	}
	for _, o := range append(tree[:len(tree):len(tree)], pkgs...) {
		s.ci.objects[o.ID] = o.Size
	}
	s.ci.tools[toolID] = c.ToolBytes
	s.ci.trees[repo+"@"+c.Commit] = tree
	return &runnerproto.CISetup{
		BaseURL: base, Commit: c.Commit,
		TreeURL:  base + "/trees/" + repo + "/" + c.Commit,
		Tool:     runnerproto.CITool{Name: c.ToolName, Version: c.ToolVersion, Arch: c.ToolArch, URL: base + "/tools/" + toolID + ".tar"},
		Packages: pkgs,
	}
}

// ContentServed is how many bytes the content routes (checkouts,
// toolchains, packages of CI jobs) sent.
func (s *Server) ContentServed() int64 { return s.ci.served.Load() }

// SetDownloadRate sets how fast the content routes send, in bytes per
// second; 0 or less sends as fast as loopback goes.
func (s *Server) SetDownloadRate(bytesPerSecond int64) { s.ci.rate.Store(bytesPerSecond) }

// ciRoutes serves the content CI jobs fetch. They are the fake's own (a
// repository's git objects, a toolchain's archive, a registry's package
// in real life come from three servers) and are neither counted as
// GitHub calls nor faulted.
func (s *Server) ciRoutes() {
	s.restMux.HandleFunc("GET /_ci/trees/{owner}/{repo}/{commit}", func(w http.ResponseWriter, r *http.Request) {
		s.ci.mu.Lock()
		tree, ok := s.ci.trees[r.PathValue("owner")+"/"+r.PathValue("repo")+"@"+r.PathValue("commit")]
		s.ci.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(tree)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		s.sendPaced(r.Context(), w, func(w io.Writer) error { _, err := w.Write(b); return err })
	})
	s.restMux.HandleFunc("GET /_ci/objects/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		s.ci.mu.Lock()
		size, ok := s.ci.objects[id]
		s.ci.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		s.sendPaced(r.Context(), w, func(w io.Writer) error { _, err := io.CopyN(w, contentOf(id), size); return err })
	})
	s.restMux.HandleFunc("GET /_ci/tools/{file}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutSuffix(r.PathValue("file"), ".tar")
		s.ci.mu.Lock()
		size, known := s.ci.tools[id]
		s.ci.mu.Unlock()
		if !ok || !known {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		s.sendPaced(r.Context(), w, func(w io.Writer) error { return writeToolArchive(w, id, size) })
	})
}

// contentOf is the endless stream of bytes an object id stands for.
func contentOf(id string) io.Reader {
	seed := sha256.Sum256([]byte(id))
	return rand.NewChaCha8(seed)
}

// writeToolArchive writes a toolchain's archive: a tar of a few files
// (bin/, lib/) of size bytes in all, made from its id.
func writeToolArchive(w io.Writer, id string, size int64) error {
	tw := tar.NewWriter(w)
	const parts = 8
	for i := range parts {
		n := size / parts
		if i == parts-1 {
			n = size - n*(parts-1)
		}
		name := fmt.Sprintf("lib/part%d.bin", i)
		if i == 0 {
			name = "bin/tool"
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: n, ModTime: packageStamp, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, contentOf(id+"/"+strconv.Itoa(i)), n); err != nil {
			return err
		}
	}
	return tw.Close()
}

// sendPaced writes what write makes to w at the content rate, counting
// the bytes sent.
func (s *Server) sendPaced(ctx context.Context, w http.ResponseWriter, write func(io.Writer) error) {
	p := &pacedWriter{ctx: ctx, w: w, rate: s.ci.rate.Load(), start: time.Now(), served: &s.ci.served, closed: s.closed}
	_ = write(p)
}

// pacedWriter sends at rate bytes per second: after each chunk it waits
// until the bytes sent so far are due.
type pacedWriter struct {
	ctx    context.Context
	w      io.Writer
	rate   int64
	start  time.Time
	sent   int64
	served *atomic.Int64
	closed <-chan struct{}
}

const pacedChunk = 32 << 10

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n, err := p.w.Write(b[:min(len(b), pacedChunk)])
		written += n
		p.sent += int64(n)
		p.served.Add(int64(n))
		b = b[n:]
		if err != nil {
			return written, err
		}
		if p.rate <= 0 {
			continue
		}
		due := p.start.Add(time.Duration(float64(p.sent) / float64(p.rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return written, p.ctx.Err()
			case <-p.closed:
				t.Stop()
				return written, ErrClosed
			}
		}
	}
	return written, nil
}
