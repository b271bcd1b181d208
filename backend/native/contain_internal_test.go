package native

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/platform"
)

func TestCommandSummary(t *testing.T) {
	got := commandSummary([]platform.Leftover{{PID: 1, Command: "sleep"}, {PID: 2, Command: "sh"}, {PID: 3, Command: "sleep"}, {PID: 4}})
	assert.Equal(t, "?, sh, sleep ×2", got)
}
