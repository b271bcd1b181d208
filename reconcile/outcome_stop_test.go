package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// A runner a stop without drain removed exits on the manager's SIGTERM
// (143) or 0: either way it ran no job, and that is no failure.
func TestOutcomeForShutdown(t *testing.T) {
	for _, code := range []int{143, 0, -1} {
		o, wait := outcomeFor(exitFacts{exitCode: code, stop: stopShutdown, deregistered: true})
		assert.False(t, wait)
		assert.Equal(t, rm.ExitedIdleWithoutWork, o.Kind, "exit code %d", code)
		assert.Contains(t, o.Detail, "manager stopped")
	}
	o, _ := outcomeFor(exitFacts{exitCode: 143, stop: stopShutdown, job: true})
	assert.Equal(t, rm.Failed, o.Kind, "one that took a job meanwhile is not said idle")
}
