package app_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/logredact"
)

// leakedPAT is a token a user pasted where a name belongs.
const leakedPAT = "ghp_0123456789abcdefABCDEF0123456789abcd"

func TestErrorOutputIsRedacted(t *testing.T) {
	e := newEnv(t)
	e.ok("init", "--no-check")
	for name, args := range map[string][]string{
		"ParseError": {"policy", "show", "a", leakedPAT},
		"RunError":   {"attempt", "show", leakedPAT},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.run(args...)
			assert.NotZero(t, r.code)
			assert.NotContains(t, r.stderr, leakedPAT[:16])
			assert.Contains(t, r.stderr, logredact.Marker)
		})
	}
}

func TestLoggerIsRedacted(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		log := app.NewLogger(&b, format, "debug")
		log.Debug("sent Bearer "+leakedPAT, "token", leakedPAT, "runner", "rm-chaos-1")
		assert.NotContains(t, b.String(), leakedPAT[:16], format)
		assert.Contains(t, b.String(), "rm-chaos-1", format)
		assert.Contains(t, b.String(), "DEBUG", format, "the level is kept")
	}
}
