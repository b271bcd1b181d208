package release

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Source is where releases are published: a base URL laid out as GitHub
// lays out a repository's releases (<base>/download/<tag>/<file>,
// <base>/latest/download/<file>).
type Source struct {
	// BaseURL; DefaultBaseURL when empty.
	BaseURL string
	// Client; http.DefaultClient when nil.
	Client *http.Client
}

// Release is one release's archive for a platform, known from its
// SHA256SUMS.
type Release struct {
	Tag     string // "v1.2.3"
	Archive string // the archive's file name
	Sums    Sums
	// Dir is the URL of the release's files (no trailing slash).
	Dir string
}

// maxSums and maxArchive bound what is read from the network.
const (
	maxSums    = 1 << 20
	maxArchive = 1 << 30
)

func (s Source) dir(tag string) string {
	base := strings.TrimRight(s.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if tag == "" {
		return base + "/latest/download"
	}
	return base + "/download/" + tag
}

// Find reads the SHA256SUMS of version's release ("" for the newest) and
// finds p's archive in it. The newest release's version is the one its
// archive's name carries. A release without p's archive is ErrNotFound.
func (s Source) Find(ctx context.Context, version string, p Platform) (Release, error) {
	tag := ""
	if version != "" {
		var err error
		if tag, err = Tag(version); err != nil {
			return Release{}, err
		}
	}
	r := Release{Dir: s.dir(tag)}
	data, err := s.get(ctx, r.Dir+"/"+SumsName, maxSums)
	if err != nil {
		return Release{}, err
	}
	if r.Sums, err = ParseSums(bytes.NewReader(data)); err != nil {
		return Release{}, err
	}
	if r.Archive, r.Tag, err = r.Sums.Archive(p); err != nil {
		return Release{}, err
	}
	if tag != "" && r.Tag != tag {
		return Release{}, fmt.Errorf("%w: the %s of %s lists %s", ErrMismatch, SumsName, tag, r.Archive)
	}
	return r, nil
}

// Download fetches r's archive and verifies it against r's SHA256SUMS:
// what it returns is the archive SHA256SUMS names, or an error.
func (s Source) Download(ctx context.Context, r Release) ([]byte, error) {
	data, err := s.get(ctx, r.Dir+"/"+r.Archive, maxArchive)
	if err != nil {
		return nil, err
	}
	if err := r.Sums.Verify(r.Archive, data); err != nil {
		return nil, err
	}
	return data, nil
}

func (s Source) get(ctx context.Context, url string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s (404)", ErrNotFound, url)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: more than %d MiB", url, limit>>20)
	}
	return data, nil
}
