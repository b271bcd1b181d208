package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestManagerShare(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts map[string]float64
		total float64 // getrusage
		want  float64
	}{
		{"nothing profiled", map[string]float64{}, 1, 0},
		{"manager alone", map[string]float64{partManager: 2}, 2, 2},
		// The runtime's and the unsampled 1 s go 3/4 to the manager.
		{"shared", map[string]float64{partManager: 3, partFakeGitHub: 0.5, partBench: 0.5, partRuntime: 0.6}, 5, 3 + 0.75},
		// More sampled than getrusage counted (its granularity): nothing
		// unsampled.
		{"oversampled", map[string]float64{partManager: 1, partFakeGitHub: 1}, 1.9, 1},
		{"fake alone", map[string]float64{partFakeGitHub: 1, partRuntime: 1}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addUnsampled(tc.parts, tc.total)
			assert.InDelta(t, tc.want, managerShare(tc.parts), 1e-9)
		})
	}
}
