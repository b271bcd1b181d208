package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pure helpers of the view, tested from inside: they are too small to
// export and too easy to get subtly wrong.

func TestFmtCPU(t *testing.T) {
	tests := map[uint32]string{0: "0.0", 50: "0.1", 950: "0.9", 1850: "1.9", 9999: "10.0", 12000: "12"}
	for in, want := range tests {
		assert.Equal(t, want, fmtCPU(in), "%d", in)
	}
}

func TestFmtDuration(t *testing.T) {
	tests := map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 45 * time.Second: "45s", 192 * time.Second: "3m12s",
		62 * time.Minute: "1h02m", 51 * time.Hour: "2d03h",
	}
	for in, want := range tests {
		assert.Equal(t, want, fmtDuration(in), "%s", in)
	}
	assert.Equal(t, "+0.2s", fmtDelta(200*time.Millisecond))
	assert.Equal(t, "+2m32s", fmtDelta(152*time.Second))
}

func TestFit(t *testing.T) {
	tests := []struct {
		in   string
		w    int
		tail bool
		want string
	}{
		{"short", 10, false, "short"},
		{"exactly", 7, false, "exactly"},
		{"truncated", 6, false, "trunc…"},
		{"rm-abc-123456", 7, true, "…123456"},
		{"x", 0, false, ""},
		{"long", 1, false, "…"},
		{"日本語です", 5, false, "日本…"},
		{"日本語です", 6, true, "…です"}, // one more wide rune would take 7 cells
		{"ab日本", 3, false, "ab…"},
	}
	for _, tt := range tests {
		got := fit(tt.in, tt.w, tt.tail)
		assert.Equal(t, tt.want, got, "fit(%q, %d, %v)", tt.in, tt.w, tt.tail)
		assert.LessOrEqual(t, textWidth(got), max(tt.w, 0))
	}
}

func TestCells(t *testing.T) {
	assert.Equal(t, 1, cells('a'))
	assert.Equal(t, 2, cells('日'))
	assert.Equal(t, 0, cells('\u0301'), "a combining accent")
	assert.Equal(t, 1, cells('\x1b'), "a control character shows as one replacement cell")
	assert.Equal(t, 6, textWidth("ab日本"))
}

func TestPainterWideAndControl(t *testing.T) {
	c := NewTextCanvas(10, 1)
	p := newPainter(c)
	n := p.text(0, 0, "a日\x1bb\tc", styleNormal, 10)
	assert.Equal(t, 7, n)
	assert.Equal(t, "a日·b c", c.Line(0))
	c = NewTextCanvas(4, 1)
	n = newPainter(c).text(0, 0, "ab日本", styleNormal, 4)
	assert.Equal(t, 4, n, "a wide rune that would cross the edge is left out")
	assert.Equal(t, "ab日", c.Line(0))
}

func TestShortTarget(t *testing.T) {
	tests := map[string]string{
		"repo:octo/app group=Default scale-set=home":  "octo/app home",
		"org:acme group=Default labels=gpu,linux":     "org:acme [gpu,linux]",
		"enterprise:big group=Builders scale-set=x64": "enterprise:big @Builders x64",
		"something unexpected":                        "something unexpected",
		"":                                            "",
	}
	for in, want := range tests {
		assert.Equal(t, want, shortTarget(in), in)
	}
}

func TestSparkline(t *testing.T) {
	assert.Equal(t, "▁▅█", sparkline([]uint64{0, 50, 100}, 3, 0), "eight levels: half rounds up to the fifth")
	assert.Equal(t, "  ▁█", sparkline([]uint64{0, 100}, 4, 0), "right-aligned, newest last")
	assert.Equal(t, "▅█", sparkline([]uint64{0, 50, 100}, 2, 0), "only the newest that fit")
	assert.Equal(t, "▁▁", sparkline([]uint32{10, 10}, 2, 1000), "scaled to top when the values are small")
	assert.Equal(t, "▁▁", sparkline([]uint64{0, 0}, 2, 0), "all zero")
	assert.Equal(t, "", sparkline([]uint64{1}, 0, 0))
}

func TestWidths(t *testing.T) {
	cols := []column{{w: 4}, {w: 5, flex: 1}, {w: 3, flex: 2, maxw: 5}}
	tests := []struct {
		total int
		want  []int
	}{
		{14, []int{4, 5, 3}},  // no room to grow
		{10, []int{4, 5, 0}},  // too narrow: what crosses the edge goes
		{13, []int{4, 5, 2}},  // ...or is cut to what is left of it
		{17, []int{4, 6, 5}},  // 3 extra, shared 1:2
		{30, []int{4, 19, 5}}, // the rest goes to the uncapped
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, widths(cols, tt.total), "total %d", tt.total)
	}
}

// Short of room, whole columns go by their drop rank, then columns narrow
// to their minimum, the one with the most to give first; what is left is
// never wider than the room.
func TestWidthsNarrowAndDrop(t *testing.T) {
	cols := []column{{w: 6, minw: 4}, {w: 8, flex: 1, minw: 3}, {w: 5, drop: 2}, {w: 4, drop: 1}, {w: 6, flex: 1}}
	tests := []struct {
		total int
		want  []int
	}{
		{33, []int{6, 8, 5, 4, 6}},
		{30, []int{6, 9, 5, 0, 7}},  // the first to drop goes; the room left grows the flex
		{26, []int{6, 10, 0, 0, 8}}, // the second
		{20, []int{6, 6, 0, 0, 6}},  // then the widest narrows
		{14, []int{4, 3, 0, 0, 5}},  // both to their minimums, the last cut at the edge
		{8, []int{4, 3, 0, 0, 0}},
	}
	for _, tt := range tests {
		ws := widths(cols, tt.total)
		assert.Equal(t, tt.want, ws, "total %d", tt.total)
		used := -1
		for _, w := range ws {
			if w > 0 {
				used += w + 1
			}
		}
		assert.LessOrEqual(t, used, tt.total, "total %d", tt.total)
	}
}

func TestShortWorkflow(t *testing.T) {
	tests := map[string]string{
		"octo/app/.github/workflows/ci.yml@refs/heads/main": "ci",
		"octo/app/.github/workflows/release.yaml@v1":        "release",
		"octo/app/.github/workflows/a.b.yml":                "a.b",
		"CI":                                                "CI",
		"":                                                  "",
	}
	for in, want := range tests {
		assert.Equal(t, want, shortWorkflow(in), in)
	}
}

// At any width the tables' columns stay apart: each value keeps to its
// column, one space at least between two columns, nothing past the edge.
func TestColumnsNeverOverlap(t *testing.T) {
	long := strings.Repeat("wide value ", 8)
	for _, cols := range [][]column{policyCols, attemptCols} {
		values := make([]string, len(cols))
		for i := range values {
			values[i] = long
		}
		for w := MinWidth; w <= 200; w++ {
			ws := widths(cols, w-gutter)
			row := []rune(formatRow(cols, ws, values))
			require.LessOrEqual(t, gutter+len(row), w, "width %d: %q", w, string(row))
			for i := range cols {
				if ws[i] == 0 {
					continue
				}
				x := columnX(ws, i) - gutter
				if x > 0 {
					assert.Equal(t, ' ', row[x-1], "width %d: no space before %s in %q", w, cols[i].title, string(row))
				}
				cell := string(row[x : x+ws[i]])
				if textWidth(long) > ws[i] {
					assert.Contains(t, cell, "…", "width %d: %s cut without an ellipsis", w, cols[i].title)
				}
			}
		}
	}
}
