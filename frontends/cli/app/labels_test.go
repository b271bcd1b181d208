package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
)

// implicitHere is this host's implicit labels, as policy show lists them.
func implicitHere() string {
	return strings.Join(github.ImplicitLabels(runtime.GOOS, runtime.GOARCH), ",")
}

func TestPolicyAddLabelsFoldCase(t *testing.T) {
	e := newEnv(t)
	r := e.run("policy", "add", "lin", "--repo", "octo/app", "--labels", "Linux,linux,gpu,GPU")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "note: policy lin: GitHub's labels ignore case: linux,GPU kept once; labels Linux,gpu")
	p, err := e.journal().PolicyByName(t.Context(), "lin")
	require.NoError(t, err)
	assert.Equal(t, []string{"Linux", "gpu"}, p.Target.Labels, "one label each, as first spelled")

	t.Run("same labels in another case are the same target", func(t *testing.T) {
		r := e.run("policy", "add", "lin2", "--repo", "octo/app", "--labels", "GPU,LINUX")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stderr, "ignore case", "no duplicate given: no note")
		q, err := e.journal().PolicyByName(t.Context(), "lin2")
		require.NoError(t, err)
		assert.Equal(t, p.Target.Key(), q.Target.Key(), "one loop serves both")
	})

	t.Run("edit", func(t *testing.T) {
		r := e.run("policy", "edit", "lin", "--labels", "arm,ARM")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "ARM kept once; labels arm")
		p, err := e.journal().PolicyByName(t.Context(), "lin")
		require.NoError(t, err)
		assert.Equal(t, []string{"arm"}, p.Target.Labels)
	})
}

func TestPolicyImplicitLabelsWarning(t *testing.T) {
	e := newEnv(t)
	warn := "serve every job of repo:octo/app asking for a self-hosted"
	for _, tt := range []struct {
		name, labels string
		warns        bool
	}{
		{"self-hosted alone", "self-hosted", true},
		{"implicit only, any case", "SELF-HOSTED," + strings.ToLower(implicitHere()), true},
		{"a label of its own", "self-hosted,gpu", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "p" + strings.ReplaceAll(strings.ReplaceAll(tt.name, " ", ""), ",", "")
			r := e.run("policy", "add", name, "--repo", "octo/app", "--labels", tt.labels)
			require.Equal(t, 0, r.code, r.stderr)
			if !tt.warns {
				assert.NotContains(t, r.stderr, "warning:")
				return
			}
			assert.Contains(t, r.stderr, "warning: policy "+name+": every runner has the labels "+implicitHere())
			assert.Contains(t, r.stderr, warn)
			assert.Contains(t, r.stderr, ",gpu, and name that in runs-on", "a fix that works")
		})
	}
	t.Run("scale-set mode never warns", func(t *testing.T) {
		r := e.run("policy", "add", "ss", "--repo", "octo/app", "--scale-set", "self-hosted")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stderr, "warning:")
	})
	t.Run("edit", func(t *testing.T) {
		r := e.run("policy", "edit", "palabelofitsown", "--labels", "self-hosted")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, warn)
		r = e.run("policy", "edit", "palabelofitsown", "--max", "2")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stderr, "warning:", "only when labels are given")
	})
	t.Run("apply", func(t *testing.T) {
		a := newEnv(t)
		file := filepath.Join(a.home, "policies.toml")
		require.NoError(t, os.WriteFile(file, []byte(`
[[policy]]
name = "any"
repo = "octo/app"
labels = ["self-hosted", "Self-Hosted"]

[[policy]]
name = "own"
repo = "octo/app"
labels = ["self-hosted", "gpu"]
`), 0o644))
		r := a.run("policy", "apply", file)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "note: policy any: GitHub's labels ignore case: Self-Hosted kept once; labels self-hosted")
		assert.Contains(t, r.stderr, "warning: policy any:")
		assert.NotContains(t, r.stderr, "policy own:")
	})
}

func TestPolicyShowImplicitLabels(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "gpu", "--repo", "octo/app", "--labels", "gpu")
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")

	out := e.ok("policy", "show", "gpu")
	assert.Contains(t, out, "implicit labels:  "+implicitHere()+" (every runner has them")
	assert.NotContains(t, e.ok("policy", "show", "home"), "implicit labels", "scale-set mode: jobs name the scale set")

	var p struct {
		Labels         []string `json:"labels"`
		ImplicitLabels []string `json:"implicit_labels"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "show", "gpu", "--json")), &p))
	assert.Equal(t, []string{"gpu"}, p.Labels)
	assert.Equal(t, github.ImplicitLabels(runtime.GOOS, runtime.GOARCH), p.ImplicitLabels)

	var list []struct {
		Name           string   `json:"name"`
		ImplicitLabels []string `json:"implicit_labels"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "list", "--json")), &list))
	require.Len(t, list, 2)
	for _, q := range list {
		if q.Name == "home" {
			assert.Equal(t, []string{}, q.ImplicitLabels, "[] in scale-set mode, never null")
		} else {
			assert.Len(t, q.ImplicitLabels, 3)
		}
	}
}

// A classic policy keeps no warm spares, and says so: policy show and the
// JSON gave the default spare of 1 that nothing used.
func TestPolicyShowClassicSpare(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "gpu", "--repo", "octo/app", "--labels", "gpu")
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--spare", "3")
	assert.Regexp(t, `(?m)^spare: +0 \(classic mode keeps none\)$`, e.ok("policy", "show", "gpu"))
	assert.Regexp(t, `(?m)^spare: +3$`, e.ok("policy", "show", "home"))
	var list []struct {
		Name        string `json:"name"`
		RunnerGroup string `json:"runner_group"`
		Spare       int    `json:"spare"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "list", "--json")), &list))
	require.Len(t, list, 2)
	for _, q := range list {
		assert.Equal(t, "Default", q.RunnerGroup, "docs/json.md: the default group's name")
		assert.Equal(t, map[string]int{"gpu": 0, "home": 3}[q.Name], q.Spare, q.Name)
	}
}
