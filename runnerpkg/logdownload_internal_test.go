package runnerpkg

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The daemon's log gets the URL and a line per quarter of a download,
// however often progress is told.
func TestLogDownload(t *testing.T) {
	var b bytes.Buffer
	o := logDownload(slog.New(slog.NewTextHandler(&b, nil)))
	o.Downloading("https://example.com/r.tar.gz")
	const total = 200 << 20
	for done := int64(0); done < total; done += 32 << 10 { // a read's worth
		o.Progress(done, total)
	}
	o.Progress(total, total)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.Len(t, lines, 4, b.String())
	assert.Contains(t, lines[0], "url=https://example.com/r.tar.gz")
	for i, p := range []string{"percent=25", "percent=50", "percent=75"} {
		assert.Contains(t, lines[i+1], p)
	}
	assert.Equal(t, Options{}, logDownload(nil), "no log, nothing told")
}
