package platform

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hostCPUMinInterval is the shortest interval HostCPU measures over: looks
// closer together than this (a TUI and a scrape at once) get the last
// figure again rather than a noisy one.
const hostCPUMinInterval = 500 * time.Millisecond

// HostCPU measures how busy the host's CPUs are between two looks, from the
// kernel's counters in /proc/stat (Linux). Elsewhere, and before a second
// look, it knows nothing. Safe for concurrent use.
type HostCPU struct {
	stat string
	now  func() time.Time

	mu      sync.Mutex
	last    cpuTimes
	lastAt  time.Time
	percent float64
	known   bool
}

// cpuTimes are the counters of the "cpu" line of /proc/stat: the time
// spent busy and in all, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

// NewHostCPU returns a HostCPU reading /proc/stat.
func NewHostCPU() *HostCPU { return newHostCPU("/proc", time.Now) }

func newHostCPU(procRoot string, now func() time.Time) *HostCPU {
	return &HostCPU{stat: filepath.Join(procRoot, "stat"), now: now}
}

// Percent is the share of all CPUs' time spent busy since the previous
// look, 0 to 100 (a look within half a second of the previous one gives
// that one's figure); false on the first look and where the system does
// not tell.
func (h *HostCPU) Percent() (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if !h.lastAt.IsZero() && now.Sub(h.lastAt) < hostCPUMinInterval {
		return h.percent, h.known
	}
	cur, err := readCPUTimes(h.stat)
	if err != nil {
		return 0, false
	}
	prev, had := h.last, !h.lastAt.IsZero()
	h.last, h.lastAt = cur, now
	if !had || cur.total <= prev.total || cur.busy < prev.busy {
		h.known = false
		return 0, false
	}
	h.percent = min(100, 100*float64(cur.busy-prev.busy)/float64(cur.total-prev.total))
	h.known = true
	return h.percent, true
}

// readCPUTimes reads the aggregate "cpu" line of a /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is within user). Idle
// and iowait are not busy.
func readCPUTimes(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var t cpuTimes
		for i, s := range fields[1:min(len(fields), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("%s: cpu field %d: %w", path, i+1, err)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		return t, nil
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, err
	}
	return cpuTimes{}, errors.New(path + ": no cpu line")
}
