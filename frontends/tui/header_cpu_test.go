package tui_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/frontends/tui"
)

// The header shows the host's CPU use beside its memory, when known.
func TestHeaderHostCPU(t *testing.T) {
	row := func(m tui.Model) string { return strings.Split(draw(m, 100, 24), "\n")[1] }
	assert.NotContains(t, row(loaded()), "cpu", "unknown: not shown")

	st := fixtureStatus()
	busy := 37.4
	st.HostCPUPercent = &busy
	m, _ := tui.Update(loaded(), tui.StatusLoaded{Status: st})
	got := row(m)
	assert.Contains(t, got, "reserve 2.0G · cpu 37% · disk", "beside the memory")
}
