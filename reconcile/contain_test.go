package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// peaks answers ExpectedPeak with a fixed figure (and nothing else).
type peaks struct {
	rm.Meters
	expected uint64
}

func (p peaks) ExpectedPeak(rm.PolicyID, uint64) uint64 { return p.expected }

// The loop asks admission's expected peak for the root's rule
// (rm.Policy.MemoryLimitFor, table-tested in the root).
func TestMemoryLimit(t *testing.T) {
	tests := map[string]struct {
		limit, expected, want uint64
	}{
		"None":      {0, 1 << 30, 0},
		"Fixed":     {3 << 30, 1 << 30, 3 << 30},
		"FromPeaks": {rm.MemoryLimitFromPeaks, 1 << 30, 2 << 30},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			l := &Loop{cfg: Config{Admission: &Admission{}, Meters: peaks{expected: tt.expected}}}
			assert.Equal(t, tt.want, l.memoryLimit(rm.Policy{MemoryLimit: tt.limit}))
		})
	}
}
