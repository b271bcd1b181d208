package app

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/simulate"
)

// Several runs of a case print each figure's mean and range, in the
// cases' order.
func TestPrintSpread(t *testing.T) {
	rep := func(eff, wait float64, launched int) simulate.CompareReport {
		return simulate.CompareReport{Mode: "scale-set",
			Manager:  simulate.ScalerResult{Efficiency: eff, Wait: simulate.Quantiles{P50: wait, P95: 2 * wait}, RunnersLaunch: launched},
			Baseline: simulate.ScalerResult{Efficiency: eff / 2, Wait: simulate.Quantiles{P50: 10 * wait, P95: 20 * wait}, RunnersLaunch: 40},
			Ratios:   simulate.CompareRatios{Efficiency: 2, WaitP50: 0.1}}
	}
	classic := simulate.CompareReport{Mode: "classic", Manager: simulate.ScalerResult{RunnerStart: simulate.Quantiles{P50: 500, P95: 1500}}}
	var b bytes.Buffer
	printSpread(&b, []compareScenario{
		{Name: "backlog", Run: 1, Report: rep(0.8, 100, 40)},
		{Name: "classic", Run: 1, Report: classic},
		{Name: "backlog", Run: 2, Report: rep(0.9, 300, 50)},
		{Name: "classic", Run: 2, Report: classic},
	})
	out := b.String()
	assert.Contains(t, out, "over 2 runs: mean (min–max)")
	assert.Contains(t, out, "runner-manager  efficiency 0.850 (0.800–0.900)")
	assert.Contains(t, out, "runners launched 45 (40–50)")
	assert.Contains(t, out, "baseline        efficiency 0.425 (0.400–0.450)")
	assert.Contains(t, out, "queue → runner started p50")
	assert.Less(t, bytes.Index(b.Bytes(), []byte("backlog")), bytes.Index(b.Bytes(), []byte("classic")), "the cases' order")
}
