package platform

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParseStat checks that any command name, however hostile, leaves the
// numeric fields readable, and that no input makes the parser panic.
func FuzzParseStat(f *testing.F) {
	f.Add("bash", uint32(1), uint64(12), uint64(34), uint64(5678), uint64(900))
	f.Add("x) S 1 2 (y", uint32(100), uint64(7), uint64(3), uint64(5001), uint64(200))
	f.Add(") ) )", uint32(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add("a\nb (c)", uint32(4194304), uint64(1<<63), uint64(1), uint64(2), uint64(3))
	f.Add("", uint32(2), uint64(18446744073709551615), uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, comm string, ppid uint32, utime, stime, start, rss uint64) {
		line := fmt.Sprintf("42 (%s) S %d 42 42 0 -1 4194304 1 2 3 4 %d %d -5 -6 20 -1 1 0 %d 123456 %d 18446744073709551615 1 2 3\n",
			comm, ppid, utime, stime, start, rss)
		st, ok := parseStat([]byte(line))
		if !ok {
			t.Fatalf("parse %q: not ok", line)
		}
		want := procStat{state: 'S', ppid: int(ppid), utime: utime, stime: stime, start: start, rssPages: rss}
		if st != want {
			t.Fatalf("parse %q:\n got %+v\nwant %+v", line, st, want)
		}
		// Any cut of the line parses or refuses; it never panics.
		for i := range len(line) {
			parseStat([]byte(line[:i]))
		}
		parseStat([]byte(strings.ReplaceAll(line, " ", "")))
	})
}
