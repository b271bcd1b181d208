package runnerpkg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// An update is proven before policies switch to it. The updater installs a
// newer release as <data>/runners/<version>/ holding UnprovenMark,
// which the launcher's default (Newest) passes over; the
// next attempt of a policy without a runner directory claims it (Claim:
// proofFile names the attempt) and launches it; once that attempt's runner
// listened or ran a job the mark goes (Promote) and every policy launches
// it, while an attempt that ended before that marks the release bad
// (MarkBad: <data>/runners/.bad/<version>), so the previous runner serves
// on and the release is not installed again for BadFor, unless a newer one
// comes.
const (
	proofFile = ".proof"
	// BadFor is how long a release that failed (its download, its
	// checksum, or its proof) is not tried again.
	BadFor = 6 * time.Hour
)

// Installs are the runners installed under a data directory, as the loops
// read and prove them.
type Installs struct {
	DataDir string
	// AutoUpdate: the daemon installs newer releases itself (Updater;
	// `[runner] auto_update`), so a policy held by a refused runner waits
	// for one; DeprecatedFix says so, or that updates are off.
	AutoUpdate bool
}

var _ rm.RunnerInstalls = Installs{}

// Newest implements rm.RunnerInstalls (Newest).
func (i Installs) Newest() (string, error) { return Newest(i.DataDir) }

// Trial implements rm.RunnerInstalls (Candidate).
func (i Installs) Trial() (rm.RunnerTrial, bool) { return Candidate(i.DataDir) }

// Claim implements rm.RunnerInstalls (Claim).
func (Installs) Claim(dir string, attempt rm.AttemptID) bool { return Claim(dir, attempt) }

// Promote implements rm.RunnerInstalls (Promote).
func (Installs) Promote(dir string) error { return Promote(dir) }

// MarkBad implements rm.RunnerInstalls (MarkBad, then BadRelease).
func (i Installs) MarkBad(version, reason string) (rm.BadRunner, error) {
	if err := MarkBad(i.DataDir, version, reason); err != nil {
		return rm.BadRunner{}, err
	}
	b, _ := BadRelease(i.DataDir, version)
	return b, nil
}

// LastBad implements rm.RunnerInstalls (LastBad).
func (i Installs) LastBad() (rm.BadRunner, bool) { return LastBad(i.DataDir) }

// Candidate returns the newest unproven runner installed under dataDir
// that is newer than the newest proven one and not marked bad.
func Candidate(dataDir string) (rm.RunnerTrial, bool) {
	runners := datadir.New(dataDir).Runners()
	entries, err := os.ReadDir(runners)
	if err != nil {
		return rm.RunnerTrial{}, false
	}
	current := ""
	if dir, err := Newest(dataDir); err == nil {
		current = filepath.Base(dir)
	}
	var best rm.RunnerTrial
	for _, e := range entries {
		v := e.Name()
		if !e.IsDir() || strings.HasPrefix(v, ".") || (best.Version != "" && !Newer(v, best.Version)) {
			continue
		}
		if current != "" && !Newer(v, current) {
			continue
		}
		dir := filepath.Join(runners, v)
		if _, err := os.Lstat(filepath.Join(dir, UnprovenMark)); err != nil {
			continue
		}
		if _, bad := BadRelease(dataDir, v); bad {
			continue
		}
		best = rm.RunnerTrial{Version: v, Dir: dir}
	}
	if best.Version == "" {
		return rm.RunnerTrial{}, false
	}
	if b, err := os.ReadFile(filepath.Join(best.Dir, proofFile)); err == nil {
		if id, err := rm.ParseAttemptID(strings.TrimSpace(string(b))); err == nil {
			best.Attempt = id
		}
	}
	return best, true
}

// Claim makes attempt the proof of the runner on trial in dir; false when
// another attempt has it already (one attempt proves a runner, even with
// several loops or daemons on one data directory).
func Claim(dir string, attempt rm.AttemptID) bool {
	f, err := os.OpenFile(filepath.Join(dir, proofFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false
	}
	_, werr := f.WriteString(attempt.String() + "\n")
	if cerr := f.Close(); werr != nil || cerr != nil {
		_ = os.Remove(filepath.Join(dir, proofFile))
		return false
	}
	return true
}

// Promote makes the runner on trial in dir the one policies launch: its
// mark goes, and its directory's time is now (a policy held by a refused
// runner sees a runner put in place after the refusal).
func Promote(dir string) error {
	if err := os.Remove(filepath.Join(dir, UnprovenMark)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("promote runner %s: %w", filepath.Base(dir), err)
	}
	_ = os.Remove(filepath.Join(dir, proofFile))
	now := time.Now()
	return os.Chtimes(dir, now, now)
}

// MarkBad records that version failed (reason, one line), so that it is
// not installed or proven again for BadFor; its directory, if any, stays
// unproven, for Prune to remove once no attempt uses it.
func MarkBad(dataDir, version, reason string) error {
	d := datadir.New(dataDir)
	if err := os.MkdirAll(d.BadRunners(), 0o755); err != nil {
		return fmt.Errorf("mark runner %s bad: %w", version, err)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	line := time.Now().UTC().Format(time.RFC3339) + " " + reason + "\n"
	if err := os.WriteFile(d.BadRunner(version), []byte(line), 0o644); err != nil {
		return fmt.Errorf("mark runner %s bad: %w", version, err)
	}
	return nil
}

// BadRelease returns version's failure while it counts (BadFor).
func BadRelease(dataDir, version string) (rm.BadRunner, bool) {
	b, err := os.ReadFile(datadir.New(dataDir).BadRunner(version))
	if err != nil {
		return rm.BadRunner{}, false
	}
	at, reason, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	t, err := time.Parse(time.RFC3339, at)
	if err != nil || time.Since(t) >= BadFor {
		return rm.BadRunner{}, false
	}
	return rm.BadRunner{Version: version, At: t, Reason: reason, RetryAt: t.Add(BadFor)}, true
}

// LastBad returns the newest release marked bad that still counts.
func LastBad(dataDir string) (rm.BadRunner, bool) {
	entries, err := os.ReadDir(datadir.New(dataDir).BadRunners())
	if err != nil {
		return rm.BadRunner{}, false
	}
	var out rm.BadRunner
	for _, e := range entries {
		if b, ok := BadRelease(dataDir, e.Name()); ok && (out.Version == "" || Newer(b.Version, out.Version)) {
			out = b
		}
	}
	return out, out.Version != ""
}

// Newer reports whether version a is higher than b (2.331.0 > 2.330.1);
// a version that does not parse is never newer.
func Newer(a, b string) bool {
	va, ok := parseVersion(a)
	if !ok {
		return false
	}
	vb, ok := parseVersion(b)
	if !ok {
		return true
	}
	return slices.Compare(va, vb) > 0
}

func parseVersion(s string) ([]int, bool) {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}
