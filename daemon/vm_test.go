package daemon_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// peaks are meters that expect what they are told, per policy.
type peaks struct {
	rm.Meters
	of map[rm.PolicyID]uint64
}

func (p peaks) ExpectedPeak(id rm.PolicyID, estimate uint64) uint64 {
	if v, ok := p.of[id]; ok {
		return v
	}
	return estimate
}

// Admission counts a VM at its full size: its guest (the policy's fixed
// limit, else [vm] memory) plus QEMU's own 50 MiB, or what its runs
// peaked at if more; other policies, and a VM policy sized from its
// peaks, by their peaks alone.
func TestVMAdmissionFloor(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "journal.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	h := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), h))
	add := func(b *storetest.PolicyBuilder) rm.Policy {
		p := b.Host(h.ID).Build()
		require.NoError(t, st.InsertPolicy(t.Context(), p))
		return p
	}
	image := rm.VMSettings{Image: "/images/runner"}
	fixed := add(storetest.NewPolicy().Name("fixed").Autoscale("fixed", 2).VM(image).MemoryLimit(1 << 30))
	sized := add(storetest.NewPolicy().Name("sized").Autoscale("sized", 2).VM(image))
	heavy := add(storetest.NewPolicy().Name("heavy").Autoscale("heavy", 2).VM(image).MemoryLimit(1 << 30))
	fromPeaks := add(storetest.NewPolicy().Name("peaks").Autoscale("peaks", 2).VM(image).MemoryLimit(rm.MemoryLimitFromPeaks))
	native := add(storetest.NewPolicy().Name("native").Autoscale("native", 2))

	m := daemon.WithVMFloor(peaks{of: map[rm.PolicyID]uint64{heavy.ID: 3 << 30}}, st, 512)
	const est = 100 << 20
	assert.Equal(t, uint64(1<<30+50<<20), m.ExpectedPeak(fixed.ID, est), "the limit is the guest's size")
	assert.Equal(t, uint64(512<<20+50<<20), m.ExpectedPeak(sized.ID, est), "[vm] memory where the policy sets none")
	assert.Equal(t, uint64(3<<30), m.ExpectedPeak(heavy.ID, est), "peaks above the floor stand")
	assert.Equal(t, uint64(est), m.ExpectedPeak(fromPeaks.ID, est))
	assert.Equal(t, uint64(est), m.ExpectedPeak(native.ID, est))

	late := add(storetest.NewPolicy().Name("late").Autoscale("late", 1).VM(image).MemoryLimit(2 << 30))
	require.Eventually(t, func() bool { return m.ExpectedPeak(late.ID, est) == 2<<30+50<<20 }, 5e9, 1e8,
		"a policy added later is read again")
}
