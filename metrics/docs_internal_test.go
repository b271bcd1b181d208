package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/status"
)

// TestDocsListEveryMetric: the metrics table of docs/cli.md names every
// metric the daemon serves (besides the Go runtime's and the process's)
// with its labels, and no metric it does not serve.
func TestDocsListEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../docs/cli.md")
	require.NoError(t, err)
	doc := string(raw)
	start := strings.Index(doc, "| metric | type | labels |")
	require.GreaterOrEqual(t, start, 0, "docs/cli.md has a metrics table")
	name := regexp.MustCompile("`([a-z_]+)`")
	documented := map[string]string{} // name → its labels cell
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 4, line)
		var first string
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			n := m[1]
			if strings.HasPrefix(n, "_") { // `_min_idle_runners` after `runner_manager_policy_max_runners`
				n = ns + "_" + strings.SplitN(strings.TrimPrefix(first, ns+"_"), "_", 2)[0] + n
			} else {
				first = n
			}
			documented[n] = cells[3]
		}
	}

	descs := make(chan *prometheus.Desc, 100)
	m := New(func() status.Status { return status.Status{} }, nil, nil)
	m.Describe(descs)
	buildInfo().Describe(descs)
	close(descs)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	vars := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	var served []string
	for d := range descs {
		s := d.String()
		n := fq.FindStringSubmatch(s)
		require.NotNil(t, n, s)
		served = append(served, n[1])
		cell, ok := documented[n[1]]
		if !assert.True(t, ok, "docs/cli.md does not list %s", n[1]) {
			continue
		}
		if l := vars.FindStringSubmatch(s); l != nil && l[1] != "" {
			for _, label := range strings.Split(l[1], ",") {
				assert.Contains(t, cell, "`"+label+"`", "docs/cli.md: %s's label %s", n[1], label)
			}
		}
	}
	for n := range documented {
		assert.True(t, slices.Contains(served, n), "docs/cli.md lists %s, which is not served", n)
	}
}
