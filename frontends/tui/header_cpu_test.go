package tui_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

// The header shows the host's CPU use beside its memory, when known, in
// cores as the attempts' CPU is (a percentage only without a CPU count).
func TestHeaderHostCPU(t *testing.T) {
	row := func(m tui.Model) string { return strings.Split(draw(m, 110, 24), "\n")[1] }
	assert.NotContains(t, row(loaded()), "cpu", "unknown: not shown")

	st := fixtureStatus()
	busy := 37.4
	st.HostCPUPercent = &busy
	m, _ := tui.Update(loaded(), tui.StatusLoaded{Status: st})
	got := row(m)
	assert.Contains(t, got, "reserve 2.0G · cpu 3.0 of 8 cores · disk", "beside the memory, 37.4 % of 8 cores")

	st.Host.CPUs = 0
	m, _ = tui.Update(loaded(), tui.StatusLoaded{Status: st})
	assert.Contains(t, row(m), "reserve 2.0G · cpu 37% · disk", "no CPU count: a percentage")
}
