package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// Sums is a release's SHA256SUMS: each file's name and its SHA-256 in hex.
type Sums map[string]string

// ParseSums reads a SHA256SUMS file as sha256sum writes it ("<64 hex>
// <name>", a '*' before the name for binary mode). A malformed line is an
// error wrapping rm.ErrInvalid: a checksum file half understood verifies
// nothing.
func ParseSums(r io.Reader) (Sums, error) {
	sums := Sums{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimLeft(name, " "), "*")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || name == "" {
			return nil, fmt.Errorf("%w: %s line %d is not \"<sha256>  <file>\": %q", rm.ErrInvalid, SumsName, n, line)
		}
		sums[name] = strings.ToLower(sum)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return sums, nil
}

// Bytes is the file in sha256sum's format, sorted by name.
func (s Sums) Bytes() []byte {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", s[n], n)
	}
	return b.Bytes()
}

// Archive is the archive for p the sums list, with its tag. A release
// without one is ErrNotFound, so a platform it was not built for is
// refused, never guessed; two versions in one file are rm.ErrInvalid.
func (s Sums) Archive(p Platform) (name, tag string, err error) {
	for n := range s {
		t, q, ok := ParseArchiveName(n)
		if !ok || q != p {
			continue
		}
		if name != "" {
			return "", "", fmt.Errorf("%w: %s lists two archives for %s: %s and %s", rm.ErrInvalid, SumsName, p, name, n)
		}
		name, tag = n, t
	}
	if name == "" {
		return "", "", fmt.Errorf("%w: the release has no archive for %s", ErrNotFound, p)
	}
	return name, tag, nil
}

// Sum is data's SHA-256 in hex.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// ErrMismatch: a file's SHA-256 is not the one SHA256SUMS lists.
var ErrMismatch = errors.New("checksum mismatch")

// Verify checks data against the sum s lists for name: ErrMismatch when
// they differ, ErrNotFound when s lists no sum for it.
func (s Sums) Verify(name string, data []byte) error {
	want, ok := s[name]
	if !ok {
		return fmt.Errorf("%w: %s lists no checksum for %s", ErrNotFound, SumsName, name)
	}
	if got := Sum(data); got != want {
		return fmt.Errorf("%w: %s has SHA-256 %s, %s says %s", ErrMismatch, name, got, SumsName, want)
	}
	return nil
}
