package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/status"
)

// The memory line says what admission holds and for what: three small jobs
// at their policy's estimate and five spares read as such, not as one
// figure "committed to runners" that looks like use.
func TestStatusSaysWhatAdmissionHolds(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name string
		mem  status.Memory
		want string
	}{
		{"JobsAndSpares", status.Memory{TotalBytes: 24 * gib, AvailableBytes: 20 * gib, ReserveBytes: 2 * gib,
			CommittedBytes: 6*gib + 5*128<<20, SpareBytes: 5 * 128 << 20, Runners: 3, Spares: 5},
			"memory:   24GiB total, 20GiB available, 2GiB reserved; admission holds 6GiB for 3 runners (expected peaks, not use) and 640MiB for 5 warm spares (a job takes it back)\n"},
		{"OneRunner", status.Memory{TotalBytes: 24 * gib, AvailableBytes: 20 * gib, ReserveBytes: 2 * gib, CommittedBytes: 2 * gib, Runners: 1},
			"memory:   24GiB total, 20GiB available, 2GiB reserved; admission holds 2GiB for 1 runner (expected peaks, not use)\n"},
		{"Nothing", status.Memory{TotalBytes: 24 * gib, AvailableBytes: 20 * gib, ReserveBytes: 2 * gib},
			"memory:   24GiB total, 20GiB available, 2GiB reserved\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			assert.NoError(t, renderStatus(&b, status.Status{Memory: tc.mem}, time.Now()))
			line, _, _ := bytes.Cut(b.Bytes(), []byte("\n"))
			assert.Equal(t, tc.want, string(line)+"\n")
			assert.NotContains(t, b.String(), "committed to runners")
		})
	}
}
