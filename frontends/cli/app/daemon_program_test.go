package app_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// TestDaemonProgram: the installed program has the daemon's commands and
// not the demo's or the bench's, whose world (fake GitHub, fake runner,
// baseline scaler) its binary does not link; it says where they are.
func TestDaemonProgram(t *testing.T) {
	for _, cmd := range []string{"demo", "bench"} {
		var out, errOut bytes.Buffer
		code := app.RunDaemon(t.Context(), []string{cmd}, app.Streams{Stdout: &out, Stderr: &errOut})
		assert.Equal(t, app.ExitUsage, code)
		assert.Contains(t, errOut.String(), "go run ./frontends/cli "+cmd)
	}
	var out bytes.Buffer
	code := app.RunDaemon(t.Context(), []string{"--help"}, app.Streams{Stdout: &out, Stderr: &out})
	assert.Equal(t, app.ExitOK, code)
	assert.Contains(t, out.String(), "Run the daemon in the foreground")
	assert.NotContains(t, out.String(), "demo")
	out.Reset()
	code = app.Run(t.Context(), []string{"--help"}, app.Streams{Stdout: &out, Stderr: &out})
	assert.Equal(t, app.ExitOK, code)
	assert.Contains(t, out.String(), "demo")

}
