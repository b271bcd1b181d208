//go:build linux

package native_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// TestCPUWeightUntilJob: an attempt's group yields the CPU (the lowest
// weight) until its runner takes a job, then has the default weight.
func TestCPUWeightUntilJob(t *testing.T) {
	var logs logBuffer
	l := containedLauncher(t, t.TempDir(), true, &logs)
	id := rm.NewAttemptID()
	p, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: id, RunnerDir: scriptRunner(t, "#!/bin/sh\nsleep 30\n"), JITConfig: "jit"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(t.Context(), 0); _ = l.Cleanup(id, false) })
	g, ok := l.Cgroups().Find(id)
	require.True(t, ok)
	w, err := g.CPUWeight()
	if errors.Is(err, platform.ErrNoCPUWeight) {
		t.Skipf("no cpu controller for the groups here: %v", err)
	}
	require.NoError(t, err)
	assert.EqualValues(t, platform.CPUWeightLowest, w, "booting: the lowest weight")
	l.JobStarted(id)
	w, err = g.CPUWeight()
	require.NoError(t, err)
	assert.EqualValues(t, platform.CPUWeightDefault, w, "running a job: the default weight")
}
