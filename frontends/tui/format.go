package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/width"
)

func itoa[T ~int | ~int64 | ~uint32 | ~uint64](v T) string { return strconv.FormatInt(int64(v), 10) }

// fmtCPU prints millicores as cores: "0.4", "2.0", "12".
func fmtCPU(m uint32) string {
	if m >= 10_000 {
		return itoa(m / 1000)
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', 1, 64)
}

// fmtDuration prints an elapsed time in at most 6 cells: "45s", "3m12s",
// "1h02m", "2d03h".
func fmtDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}

// fmtDelta prints a time offset with a sign and one decimal under a minute.
func fmtDelta(d time.Duration) string {
	if d < time.Minute {
		return "+" + strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return "+" + fmtDuration(d)
}

// cells returns how many terminal cells r takes: 0 for a combining mark or
// a control character (which the painter replaces), 2 for a wide one.
func cells(r rune) int {
	switch {
	case r >= 0x20 && r < 0x7f:
		return 1
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return 1 // shown as a replacement
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// textWidth is how many cells s takes.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += cells(r)
	}
	return n
}

// fit cuts s to w cells with an ellipsis, keeping its tail instead of its
// head when tail is true (for names whose end tells them apart).
func fit(s string, w int, tail bool) string {
	if w <= 0 {
		return ""
	}
	if textWidth(s) <= w {
		return s
	}
	if w == 1 {
		return "…"
	}
	rs := []rune(s)
	n := 1 // the ellipsis
	if tail {
		i := len(rs)
		for i > 0 && n+cells(rs[i-1]) <= w {
			i--
			n += cells(rs[i])
		}
		return "…" + string(rs[i:])
	}
	i := 0
	for i < len(rs) && n+cells(rs[i]) <= w {
		n += cells(rs[i])
		i++
	}
	return strings.TrimRight(string(rs[:i]), " ") + "…" // "octo/docs…", not "octo/docs …"
}

// pad fits s to exactly w cells, aligned left or right.
func pad(s string, w int, right bool, tail bool) string {
	s = fit(s, w, tail)
	gap := strings.Repeat(" ", max(0, w-textWidth(s)))
	if right {
		return gap + s
	}
	return s + gap
}

// clamp bounds v to lo..hi.
func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// fmtLatency is a job-start figure: milliseconds below a second, tenths
// below a minute, else as fmtDuration.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", max(d, 0).Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmtDuration(d)
}
