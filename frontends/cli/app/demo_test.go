package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// The demo end to end: the fake GitHub, real runner processes, a real
// journal, through the parser.
func TestDemo(t *testing.T) {
	for _, mode := range []string{"scale-set", "classic"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			args := []string{"demo", "--jobs", "5", "--keep"}
			if mode == "classic" {
				args = append(args, "--classic")
			}
			out := e.ok(args...)
			assert.Contains(t, out, mode+" mode")
			assert.Contains(t, out, "jobs served:        5 of 5")
			assert.Contains(t, out, "5 distinct ephemeral runners; 0 jobs started twice")
			assert.Contains(t, out, "5 completed_job")
			assert.Regexp(t, `wait for a runner:  p50 \S+, p95 \S+`, out)
			assert.Regexp(t, `GitHub calls/job:   \d+\.\d`, out)
			assert.Contains(t, out, "5/5 jobs done")

			// --keep leaves a journal the other commands read.
			m := regexp.MustCompile(`data directory: (\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			dir := m[1]
			t.Cleanup(func() { os.RemoveAll(dir) })
			r := e.runRaw("--data-dir", dir, "attempts", "--state", "finished")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, 5, strings.Count(r.stdout, "completed_job"), r.stdout)
			_, err := os.Stat(filepath.Join(dir, "journal.db"))
			require.NoError(t, err)
			// Its policies keep no warm spares, as the README says: each
			// job's wait shows a runner's boot.
			r = e.runRaw("--data-dir", dir, "policy", "show", "demo-1")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Regexp(t, `spare:\s+0\b`, r.stdout)
			readme, err := os.ReadFile("../../../README.md")
			require.NoError(t, err)
			assert.Contains(t, strings.Join(strings.Fields(string(readme)), " "), "The demo's policies keep no warm spares (`spare: 0` in `policy show demo-1`)")
		})
	}
}

func TestDemoRefusesBadFigures(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.fails(app.ExitInvalid, "demo", "--jobs", "0"), "at least 1")
}
