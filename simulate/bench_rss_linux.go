package simulate

import (
	"bytes"
	"os"
	"strconv"
)

// peakRSS is this process's peak resident memory: VmHWM of
// /proc/self/status.
func peakRSS() (uint64, string) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, "unavailable: " + err.Error()
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "12345", "kB"
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			break
		}
		return kb << 10, "/proc/self/status VmHWM"
	}
	return 0, "unavailable: no VmHWM in /proc/self/status"
}
