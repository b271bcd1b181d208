package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// peaks answers ExpectedPeak with a fixed figure.
type peaks uint64

func (p peaks) CurrentRSS(rm.AttemptID) (uint64, bool)    { return 0, false }
func (p peaks) Take(rm.AttemptID) (rm.AttemptUsage, bool) { return rm.AttemptUsage{}, false }
func (p peaks) ExpectedPeak(rm.PolicyID, uint64) uint64   { return uint64(p) }

func TestMemoryLimit(t *testing.T) {
	tests := map[string]struct {
		limit, expected, want uint64
	}{
		"None":           {0, 1 << 30, 0},
		"Fixed":          {3 << 30, 1 << 30, 3 << 30},
		"FromPeaks":      {rm.MemoryLimitFromPeaks, 1 << 30, 2 << 30},
		"FromSmallPeaks": {rm.MemoryLimitFromPeaks, 10 << 20, rm.MinMemoryLimit},
		"Overflow":       {rm.MemoryLimitFromPeaks, 1 << 63, 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			l := &Loop{cfg: Config{Admission: &Admission{}, Meters: peaks(tt.expected)}}
			assert.Equal(t, tt.want, l.memoryLimit(rm.Policy{MemoryLimit: tt.limit}))
		})
	}
}
