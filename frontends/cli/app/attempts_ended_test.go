package app_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An ended attempt prints the end it reached, finished or failed, never both.
func TestAttemptsOneEnd(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e) // list[0] finished, list[1] failed

	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("attempts", "--json", "--state", "finished,failed")), &out))
	require.Len(t, out, 2)
	for _, a := range out {
		times := a["times"].(map[string]any)
		state := a["state"].(string)
		assert.NotNil(t, times[state], "attempt %s", a["id"])
		other := map[string]string{"finished": "failed", "failed": "finished"}[state]
		assert.Contains(t, times, other, "every state's key is present")
		assert.Nil(t, times[other], "a %s attempt has no %s time", state, other)
	}

	finished := regexp.MustCompile(`(?m)^\s+finished:`)
	failed := regexp.MustCompile(`(?m)^\s+failed:`)
	show := e.ok("attempt", "show", list[0].ID.String())
	assert.Regexp(t, finished, show)
	assert.NotRegexp(t, failed, show)
	show = e.ok("attempt", "show", list[1].ID.String())
	assert.Regexp(t, failed, show)
	assert.NotRegexp(t, finished, show)
}
