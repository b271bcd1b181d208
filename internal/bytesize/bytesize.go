// Package bytesize owns how the manager prints a byte count for people:
// in the form its configuration reads back ("1.5GiB"), or compact for a
// table cell ("1.5G").
package bytesize

import (
	"strconv"
	"strings"
)

var units = []struct {
	name string
	size uint64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Format prints b in the largest binary unit it reaches, with at most one
// decimal: "2GiB", "1.5GiB", "512MiB", "300B". Sizes in the configuration
// are written the same way.
func Format(b uint64) string {
	for _, u := range units {
		if b >= u.size {
			s := strconv.FormatFloat(float64(b)/float64(u.size), 'f', 1, 64)
			return strings.TrimSuffix(s, ".0") + u.name
		}
	}
	return strconv.FormatUint(b, 10) + "B"
}

// Compact prints b in at most 5 cells (below 1000 PiB), for a table: "300B", "512M",
// "1.5G", "16G"; one decimal below 10 of a unit, none from 10 on.
func Compact(b uint64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatUint(b, 10) + "B"
	}
	v := float64(b)
	for _, u := range []string{"K", "M", "G", "T", "P"} {
		v /= unit
		if v < unit || u == "P" {
			if v < 10 {
				return strconv.FormatFloat(v, 'f', 1, 64) + u
			}
			return strconv.FormatFloat(v, 'f', 0, 64) + u
		}
	}
	return strconv.FormatUint(b, 10) + "B" // not reached: "P" ends the loop
}
