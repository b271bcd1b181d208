package app_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// completion prints each shell's script, naming this program by its path.
func TestCompletionScripts(t *testing.T) {
	e := newEnv(t)
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			golden(t, "completion-"+shell, e.ok("completion", shell))
		})
	}
	t.Run("Quoted", func(t *testing.T) {
		defer app.SetExecutable("/opt/my tools/runner-manager")()
		assert.Contains(t, e.ok("completion", "bash"), "complete -C '/opt/my tools/runner-manager' runner-manager\n")
	})
	assert.Contains(t, e.fails(2, "completion", "tcsh"), "must be one of")
}

// The program answers the shell's completion requests (COMP_LINE set) with
// the commands and flags that fit the last word.
func TestCompletionAnswers(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{"runner-manager pol", "policy\n"},
		{"runner-manager policy r", "resume\nrm\n"},
		{"runner-manager policy add home --sc", "--scale-set\n"},
		{"runner-manager completion ", "bash\nzsh\nfish\n"},
		{"runner-manager attempts --js", "--json\n"},
		{"runner-manager zzz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			e := newEnv(t)
			t.Setenv("COMP_LINE", tt.line)
			t.Setenv("COMP_POINT", "")
			r := e.runRaw("these", "args", "are", "ignored")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, lines(tt.want), lines(r.stdout))
			assert.Empty(t, r.stderr)
		})
	}
}

// lines are the lines of s, sorted: a predictor's order is its own.
func lines(s string) []string {
	out := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(out)
	return out
}

// A policy argument completes with the journal's policy names.
func TestCompletionPolicyNames(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	e.ok("policy", "add", "gpu", "--repo", "octo/app", "--labels", "gpu")
	e.ok("policy", "add", "heavy", "--repo", "octo/app", "--scale-set", "heavy")
	t.Setenv("RUNNER_MANAGER_DATA_DIR", e.dataDir)
	for line, want := range map[string]string{
		"runner-manager policy show h":        "heavy\nhome\n",
		"runner-manager policy rm g":          "gpu\n",
		"runner-manager attempts --policy ho": "home\n",
		"runner-manager policy move ho":       "home\n",
		"runner-manager weights --policy g":   "gpu\n",
	} {
		t.Setenv("COMP_LINE", line)
		r := e.runRaw()
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, lines(want), lines(r.stdout), line)
	}
	t.Setenv("RUNNER_MANAGER_DATA_DIR", t.TempDir())
	t.Setenv("COMP_LINE", "runner-manager policy show h")
	r := e.runRaw()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout, "no journal: no names")
}

// An attempt argument (attempt show, logs) completes with the journal's
// attempt ids.
func TestCompletionAttemptIDs(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)
	t.Setenv("RUNNER_MANAGER_DATA_DIR", e.dataDir)
	id := list[0].ID.String()
	for _, line := range []string{"runner-manager logs " + id[:len(id)-2], "runner-manager attempt show " + id[:len(id)-2]} {
		t.Setenv("COMP_LINE", line)
		r := e.runRaw()
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, []string{id}, lines(r.stdout), line)
	}
	t.Setenv("COMP_LINE", "runner-manager logs ")
	r := e.runRaw()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, lines(r.stdout), len(list))
}
