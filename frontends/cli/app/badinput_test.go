package app_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// Bad values get a clear message and exit status 3 (invalid argument), never kong's garbled
// ones ("perhaps try", "expected value value").
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	add := []string{"policy", "add", "p", "--repo", "o/r", "--scale-set", "s"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"EstimateNoUnit", append(add, "--memory-estimate", "1.5"), `size "1.5" has no unit`},
		{"EstimateZero", append(add, "--memory-estimate", "0"), "--memory-estimate 0: give what a job peaks at"},
		{"EstimateBelowFloor", append(add, "--memory-estimate", "2MiB"), "memory estimate 2MiB is below 16MiB"},
		{"EstimateNegative", append(add, "--memory-estimate", "-5G"), `size "-5G" is negative`},
		{"MaxNegative", append(add, "--max", "-1"), "max -1 must be at least 1"},
		{"MinIdleNegative", append(add, "--min-idle", "-2"), "min idle -2 must not be negative"},
		{"LogsLinesNegativeEq", []string{"logs", "x", "-n=-3"}, "logs: -n -3: give a number of lines"},
		{"LogsLinesNegative", []string{"logs", "x", "-n", "-3"}, "logs: -n -3: give a number of lines"},
		{"AttemptsLimitNegative", []string{"attempts", "--limit", "-1"}, "attempts: --limit -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(tc.args...)
			assert.Equal(t, app.ExitInvalid, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			for _, garbled := range []string{"perhaps try", "expected value", `got "=`} {
				assert.NotContains(t, r.stderr, garbled)
			}
			assert.Equal(t, 1, strings.Count(r.stderr, "runner-manager:"), r.stderr)
		})
	}
	assert.NoFileExists(t, e.dataDir+"/journal.db", "nothing written for bad input")
}

// A max beyond what the host can hold is kept, with a word on what it admits.
func TestPolicyAddMaxBeyondHost(t *testing.T) {
	e := newEnv(t)
	r := e.run("policy", "add", "big", "--repo", "o/r", "--scale-set", "s", "--max", "100000")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "max 100000")
	assert.Contains(t, r.stderr, "note: max 100000 is more than this host can hold")
	assert.Contains(t, r.stderr, "runners of 2GiB at once")

	r = e.run("policy", "add", "small", "--repo", "o/r", "--scale-set", "t", "--max", "1", "--memory-estimate", "64MiB")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "more than this host can hold")
}
