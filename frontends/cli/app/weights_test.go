package app_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// seedWeights gives two policies' jobs weights, as two hosts recorded them.
func seedWeights(t *testing.T, e *env) {
	t.Helper()
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4")
	e.ok("policy", "add", "web", "--repo", "octo/web", "--scale-set", "web", "--max", "4")
	st := e.journal()
	home, err := st.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	web, err := st.PolicyByName(t.Context(), "web")
	require.NoError(t, err)
	hostA, hostB := rm.NewHostID(), rm.NewHostID()
	end := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	add := func(p rm.Policy, host rm.HostID, repo, wf, name string, mib uint64, cpu uint32, d time.Duration) {
		a := storetest.NewAttempt().Policy(p.ID).Host(host).State(rm.StateFinished).
			Job(rm.Job{ID: "1", Number: 1, Workflow: wf, Name: name}).Build()
		require.NoError(t, st.RecordAttempt(t.Context(), a))
		require.NoError(t, st.RecordJobWeight(t.Context(), store.JobWeight{
			Attempt: a.ID, Policy: p.ID, Host: host, Job: store.JobKey{Repository: repo, Workflow: wf, Name: name},
			Usage:    rm.AttemptUsage{PeakRSSBytes: mib << 20, CPUAvgMillicores: cpu, CPUPeakMillicores: 2 * cpu, Samples: 5},
			Duration: d, EndedAt: end,
		}))
		end = end.Add(time.Minute)
	}
	for i, mib := range []uint64{900, 1100, 1000, 1500} {
		host := hostA
		if i%2 == 1 {
			host = hostB
		}
		add(home, host, "octo/app", "ci", "build", mib, 1500+uint32(100*i), time.Duration(3+i)*time.Minute)
	}
	add(home, hostA, "octo/app", "ci", "lint", 200, 300, 40*time.Second)
	add(web, hostB, "octo/web", "deploy", "pages", 600, 800, 90*time.Second)
	add(web, hostB, "octo/web", "deploy", "pages", 700, 900, 2*time.Minute)
}

func TestWeightsTable(t *testing.T) {
	e := newEnv(t)
	seedWeights(t, e)
	golden(t, "weights", e.ok("weights"))

	e2 := newEnv(t)
	e2.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	assert.Equal(t, "no job weights match: they are kept as runners finish jobs\n", e2.ok("weights"))
}

// --repo names a repository: anything else is refused, not answered with
// an empty list.
func TestWeightsBadRepo(t *testing.T) {
	e := newEnv(t)
	seedWeights(t, e)
	for _, repo := range []string{"not a repo", "octo", "a/b/c"} {
		stderr := e.fails(app.ExitInvalid, "weights", "--repo", repo)
		assert.Contains(t, stderr, "--repo: invalid: repository "+strconv.Quote(repo)+" is not owner/repo")
	}
}

func TestWeightsFilters(t *testing.T) {
	e := newEnv(t)
	seedWeights(t, e)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"octo/app ci build 4", "octo/web deploy pages 2", "octo/app ci lint 1"}},
		{[]string{"--policy", "web"}, []string{"octo/web deploy pages 2"}},
		{[]string{"--repo", "octo/app"}, []string{"octo/app ci build 4", "octo/app ci lint 1"}},
		{[]string{"--limit", "1"}, []string{"octo/app ci build 4"}},
		{[]string{"--repo", "octo/none"}, []string{}},
	} {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			var out []map[string]any
			require.NoError(t, json.Unmarshal([]byte(e.ok(append([]string{"weights", "--json"}, tt.args...)...)), &out))
			got := []string{}
			for _, j := range out {
				got = append(got, fmt.Sprintf("%s %s %s %v", j["repository"], j["workflow"], j["name"], j["count"]))
			}
			assert.Equal(t, tt.want, got)
		})
	}
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("weights", "--json", "--limit", "1")), &out))
	// build: 900, 1000, 1100, 1500 MiB → p50 the 2nd, p90 the 4th.
	assert.Equal(t, float64(1000<<20), out[0]["peak_rss_p50_bytes"])
	assert.Equal(t, float64(1500<<20), out[0]["peak_rss_p90_bytes"])
	assert.Equal(t, float64(4*time.Minute), out[0]["duration_p50_ns"])

	assert.Contains(t, e.fails(app.ExitNotFound, "weights", "--policy", "nope"), "nope")
	e.fails(app.ExitInvalid, "weights", "--limit", "-1")
}

func TestWeightsJSONSchema(t *testing.T) {
	e := newEnv(t)
	seedWeights(t, e)
	s, ok := docSchemas(t)["weights"]
	require.True(t, ok, "docs/json.md has a weights section")
	checkSchema(t, s, e.ok("weights", "--json"), true)
}
