package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
)

const gib = 1 << 30

func TestAdmissionDecide(t *testing.T) {
	adm := &reconcile.Admission{Reserve: gib / 2, DiskFloor: 10 * gib, DiskPath: "/data"}
	tests := []struct {
		name   string
		ask    reconcile.Ask
		reason string
		detail string
	}{
		{name: "OK", ask: reconcile.Ask{TotalMemory: 4 * gib, Committed: 1536 << 20, Expected: 1536 << 20, Live: 1, Max: 4}},
		{name: "Exactly", ask: reconcile.Ask{TotalMemory: 4 * gib, Committed: 2 * gib, Expected: 3 * gib / 2, Live: 1, Max: 4}},
		{name: "Memory", ask: reconcile.Ask{TotalMemory: 4 * gib, Committed: 3 * gib, Expected: 1536 << 20, Live: 2, Max: 4},
			reason: status.RefusedMemory, detail: "3GiB committed + 1.5GiB expected > 3.5GiB (4GiB total − 512MiB reserve)"},
		{name: "ReserveAboveTotal", ask: reconcile.Ask{TotalMemory: gib / 4, Expected: 1, Live: 0, Max: 4},
			reason: status.RefusedMemory},
		{name: "MemoryNotChecked", ask: reconcile.Ask{Committed: 100 * gib, Expected: 100 * gib, Live: 0, Max: 4}},
		{name: "Disk", ask: reconcile.Ask{DiskKnown: true, DiskFree: 9 * gib, Live: 0, Max: 4},
			reason: status.RefusedDisk, detail: "9GiB free on /data, below the floor of 10GiB"},
		{name: "DiskOK", ask: reconcile.Ask{DiskKnown: true, DiskFree: 10 * gib, Live: 0, Max: 4}},
		{name: "Max", ask: reconcile.Ask{Live: 4, Max: 4}, reason: status.RefusedMax, detail: "4 live of max 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := adm.Decide(tt.ask)
			assert.Equal(t, tt.reason == "", ok)
			assert.Equal(t, tt.reason, r.Reason)
			assert.Contains(t, r.Detail, tt.detail)
		})
	}
}

func TestAdmissionCapacity(t *testing.T) {
	adm := &reconcile.Admission{Reserve: gib / 2}
	tests := []struct {
		name string
		ask  reconcile.Ask
		want int
	}{
		{name: "MemoryBound", ask: reconcile.Ask{TotalMemory: 4 * gib, Expected: 1536 << 20, Max: 4}, want: 2},
		{name: "CountsLive", ask: reconcile.Ask{TotalMemory: 4 * gib, Committed: 1536 << 20, Expected: 1536 << 20, Live: 1, Max: 4}, want: 2},
		{name: "MaxBound", ask: reconcile.Ask{TotalMemory: 64 * gib, Expected: gib, Max: 4}, want: 4},
		{name: "OverCommitted", ask: reconcile.Ask{TotalMemory: 4 * gib, Committed: 5 * gib, Expected: gib, Live: 3, Max: 4}, want: 3},
		{name: "Unchecked", ask: reconcile.Ask{Expected: gib, Live: 1, Max: 3}, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, adm.Capacity(tt.ask))
		})
	}
}
