package datadir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Peaks is the memory peaks file: for each policy, the peak RSS in bytes of
// its newest attempts that completed a job, oldest first. Admission reads a
// high percentile of these as a policy's expected weight, and they must
// outlive a restart of the manager.
//
// On disk it is TOML:
//
//	[policies]
//	<policy id> = [734003200, 812646400]
//
// TOML integers are signed 64-bit, so a value must not exceed
// math.MaxInt64 (8 EiB, far beyond any memory); SavePeaks refuses one that
// does, and LoadPeaks takes a negative value for corruption.
type Peaks struct {
	// Policies maps a policy ID (its printable form) to its peaks.
	Policies map[string][]uint64
}

// peaksFile is the TOML shape: signed, as TOML integers are.
type peaksFile struct {
	Policies map[string][]int64 `toml:"policies"`
}

const peaksHeader = "# runner-manager: peak memory (bytes) of the newest completed jobs per\n# policy, oldest first. Written by the manager; safe to delete.\n\n"

// PeaksOption configures LoadPeaks.
type PeaksOption func(*peaksLoad)

type peaksLoad struct {
	log     *slog.Logger
	atMost  uint64
	dropped []string
}

// PeaksLogger sets where LoadPeaks warns (default slog.Default()): the
// daemon's configured logger, so the warning has the configured format.
func PeaksLogger(log *slog.Logger) PeaksOption {
	return func(o *peaksLoad) {
		if log != nil {
			o.log = log
		}
	}
}

// PeaksAtMost checks the peaks on load: 0 and values above bytes (the
// host's total memory) are refused, since no job of this host can have had
// them, and one such value would make admission expect the impossible.
// Without it the values are read as they are.
func PeaksAtMost(bytes uint64) PeaksOption {
	return func(o *peaksLoad) { o.atMost = bytes }
}

// LoadPeaks reads the peaks file at path. A missing file means no peaks yet:
// empty Peaks and a nil error. A corrupt file (not TOML, or not the shape
// above, or a negative value) is logged as a warning with the TOML error and
// its line, moved aside to "<path>.corrupt-<unix seconds>" for inspection,
// and also read as empty Peaks with a nil error, so a damaged file never
// stops the manager; the error is non-nil only when the file cannot be read
// or moved aside. Implausible values (0, or above PeaksAtMost) are left out
// with a warning; the rest of the file is kept. The returned Policies map is
// never nil.
func LoadPeaks(path string, opts ...PeaksOption) (Peaks, error) {
	o := peaksLoad{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	empty := Peaks{Policies: map[string][]uint64{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("read memory peaks: %w", err)
	}
	p, err := decodePeaks(b)
	if err == nil {
		if o.atMost > 0 {
			o.plausible(p)
		}
		if len(o.dropped) > 0 {
			o.log.Warn("memory peaks file holds implausible peaks; left out", "path", path,
				"dropped", strings.Join(o.dropped, ", "), "host_memory", o.atMost)
		}
		return p, nil
	}
	aside, mvErr := moveAside(path)
	if mvErr != nil {
		o.log.Warn("memory peaks file is corrupt; ignoring it", "path", path, "err", err)
		return empty, fmt.Errorf("memory peaks file %s is corrupt (%v) and could not be moved aside: %w; delete or fix it", path, err, mvErr)
	}
	o.log.Warn("memory peaks file is corrupt; moved aside, starting with no peaks",
		"path", path, "moved_to", aside, "err", err)
	return empty, nil
}

// plausible drops from p the peaks no job can have had: 0, or above the
// host's memory; a policy left with none is dropped.
func (o *peaksLoad) plausible(p Peaks) {
	for id, vs := range p.Policies {
		if len(vs) == 0 {
			continue
		}
		kept := vs[:0]
		for _, v := range vs {
			if v == 0 || v > o.atMost {
				o.dropped = append(o.dropped, fmt.Sprintf("%s: %d", id, v))
				continue
			}
			kept = append(kept, v)
		}
		if len(kept) == 0 {
			delete(p.Policies, id)
		} else {
			p.Policies[id] = kept
		}
	}
	slices.Sort(o.dropped)
}

func decodePeaks(b []byte) (Peaks, error) {
	var f peaksFile
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&f)
	if err != nil {
		return Peaks{}, err
	}
	// The decoder skips a "policies" of the wrong kind silently.
	if md.IsDefined("policies") && md.Type("policies") != "Hash" {
		return Peaks{}, fmt.Errorf("policies is a %s, not a table", md.Type("policies"))
	}
	p := Peaks{Policies: make(map[string][]uint64, len(f.Policies))}
	for id, vs := range f.Policies {
		out := make([]uint64, len(vs))
		for i, v := range vs {
			if v < 0 {
				return Peaks{}, fmt.Errorf("policy %q: peak %d is negative", id, v)
			}
			out[i] = uint64(v)
		}
		p.Policies[id] = out
	}
	return p, nil
}

// moveAside renames a corrupt file to a free "<path>.corrupt-<unix>[.n]".
func moveAside(path string) (string, error) {
	base := path + ".corrupt-" + strconv.FormatInt(time.Now().Unix(), 10)
	for n := 0; n < 100; n++ {
		aside := base
		if n > 0 {
			aside += "." + strconv.Itoa(n)
		}
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			return aside, os.Rename(path, aside)
		}
	}
	return "", fmt.Errorf("no free name beside %s", base)
}

// SavePeaks writes p to path atomically: a reader (or a crash) sees the old
// file or the new one, never a mix. It writes a 0600 temporary file in the
// same directory, syncs it, renames it over path and syncs the directory,
// creating the directory (0700) if missing.
func SavePeaks(path string, p Peaks) error {
	f := peaksFile{Policies: make(map[string][]int64, len(p.Policies))}
	for id, vs := range p.Policies {
		out := make([]int64, len(vs))
		for i, v := range vs {
			if v > math.MaxInt64 {
				return fmt.Errorf("save memory peaks: policy %q: peak %d exceeds the TOML integer range", id, v)
			}
			out[i] = int64(v)
		}
		f.Policies[id] = out
	}
	var buf bytes.Buffer
	buf.WriteString(peaksHeader)
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("save memory peaks: encode: %w", err)
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("save memory peaks: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with data through a synced temporary file
// (WriteFileAtomic), creating its directory.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}
