package platform_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"
)

func TestTailLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name     string
		text     string
		n        int
		maxBytes int64
		want     []string
	}{
		{"Empty", "", 5, 1 << 20, nil},
		{"Fewer", "a\nb\n", 5, 1 << 20, []string{"a", "b"}},
		{"Last", "a\nb\nc\nd\n", 2, 1 << 20, []string{"c", "d"}},
		{"NoFinalNewline", "a\nb\nc", 2, 1 << 20, []string{"b", "c"}},
		{"CRLF", "a\r\nb\r\n", 5, 1 << 20, []string{"a", "b"}},
		{"BlankLinesKept", "a\n\nb\n", 5, 1 << 20, []string{"a", "", "b"}},
		{"InvalidUTF8", "ok\n\xff\xfe bad\n", 5, 1 << 20, []string{"ok", "\uFFFD bad"}},
		{"BoundCutsPartialLine", long + "\n" + "tail1\ntail2\n", 10, 20, []string{"tail1", "tail2"}},
		{"BoundInsideOneLine", "start\n" + long, 10, 20, nil},
		{"Zero", "a\n", 0, 1 << 20, nil},
		{"AcrossChunks", strings.Repeat(long+"\n", 300) + "end\n", 2, 1 << 20, []string{long, "end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := platform.TailLines(bytes.NewReader([]byte(tt.text)), tt.n, tt.maxBytes)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// countingReader counts the bytes read, to show the tail is read from the
// end.
type countingReader struct {
	r    *bytes.Reader
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

func (c *countingReader) Size() int64 { return c.r.Size() }

func TestTailLinesReadsFromTheEnd(t *testing.T) {
	big := bytes.Repeat([]byte("a line of some forty characters or so..\n"), 100_000) // 4 MB
	cr := &countingReader{r: bytes.NewReader(big)}
	lines, err := platform.TailLines(cr, 20, 1<<20)
	require.NoError(t, err)
	assert.Len(t, lines, 20)
	assert.LessOrEqual(t, cr.read, int64(16<<10), "20 lines need a chunk or two, not the file")
}

func BenchmarkTailLines(b *testing.B) {
	path := filepath.Join(b.TempDir(), "runner.log")
	big := bytes.Repeat([]byte("[2025-06-01 11:57:25Z INFO Worker] Running: go build ./...\n"), 200_000) // 12 MB
	require.NoError(b, os.WriteFile(path, big, 0o600))
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	for b.Loop() {
		if _, err := platform.TailLines(f, 200, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSeekLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.log")
	var b strings.Builder
	for i := range 3000 { // more than one block
		b.WriteString(strings.Repeat("x", i%50) + "\n")
	}
	b.WriteString("last\n")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tests := []struct {
		n    int
		want string
	}{
		{1, "last\n"},
		{2, strings.Repeat("x", 2999%50) + "\nlast\n"},
		{1_000_000, b.String()},
	}
	for _, tt := range tests {
		require.NoError(t, platform.SeekLastLines(f, tt.n))
		got := new(bytes.Buffer)
		_, err := got.ReadFrom(f)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got.String(), "last %d lines", tt.n)
	}
}
