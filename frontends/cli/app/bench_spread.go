package app

import (
	"fmt"
	"io"

	"github.com/runner-manager/runner-manager/simulate"
)

// printSpread prints, for each case of several runs, the mean of each
// figure and its range: what one run alone cannot say.
func printSpread(w io.Writer, runs []compareScenario) {
	var names []string
	by := map[string][]simulate.CompareReport{}
	for _, sc := range runs {
		if _, ok := by[sc.Name]; !ok {
			names = append(names, sc.Name)
		}
		by[sc.Name] = append(by[sc.Name], sc.Report)
	}
	fmt.Fprintf(w, "\nover %d runs: mean (min–max)\n", len(by[names[0]]))
	for _, name := range names {
		reps := by[name]
		fig := func(f func(simulate.CompareReport) float64) spread {
			var s spread
			for i, r := range reps {
				v := f(r)
				if i == 0 || v < s.min {
					s.min = v
				}
				s.max = max(s.max, v)
				s.mean += v / float64(len(reps))
			}
			return s
		}
		fmt.Fprintf(w, "%s\n", name)
		if reps[0].Mode == "classic" {
			fmt.Fprintf(w, "  queue → runner started p50 %s, p95 %s\n",
				fig(func(r simulate.CompareReport) float64 { return r.Manager.RunnerStart.P50 }).ms(),
				fig(func(r simulate.CompareReport) float64 { return r.Manager.RunnerStart.P95 }).ms())
			fmt.Fprintf(w, "  queue → job started p50 %s, p95 %s\n",
				fig(func(r simulate.CompareReport) float64 { return r.Manager.Wait.P50 }).ms(),
				fig(func(r simulate.CompareReport) float64 { return r.Manager.Wait.P95 }).ms())
			continue
		}
		for _, side := range []struct {
			label string
			of    func(simulate.CompareReport) simulate.ScalerResult
		}{
			{"runner-manager", func(r simulate.CompareReport) simulate.ScalerResult { return r.Manager }},
			{"baseline", func(r simulate.CompareReport) simulate.ScalerResult { return r.Baseline }},
		} {
			fmt.Fprintf(w, "  %-15s efficiency %s, wait p50 %s, p95 %s, runners launched %s\n", side.label,
				fig(func(r simulate.CompareReport) float64 { return side.of(r).Efficiency }).num("%.3f"),
				fig(func(r simulate.CompareReport) float64 { return side.of(r).Wait.P50 }).ms(),
				fig(func(r simulate.CompareReport) float64 { return side.of(r).Wait.P95 }).ms(),
				fig(func(r simulate.CompareReport) float64 { return float64(side.of(r).RunnersLaunch) }).num("%.0f"))
		}
		fmt.Fprintf(w, "  %-15s efficiency %s, wait p50 %s\n", "ratio",
			fig(func(r simulate.CompareReport) float64 { return r.Ratios.Efficiency }).num("%.2f"),
			fig(func(r simulate.CompareReport) float64 { return r.Ratios.WaitP50 }).num("%.3f"))
	}
}

// spread is one figure over several runs.
type spread struct{ mean, min, max float64 }

func (s spread) num(format string) string {
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.mean, s.min, s.max)
}

// ms formats milliseconds as the bench does.
func (s spread) ms() string {
	return fmt.Sprintf("%s (%s–%s)", simulate.FormatMS(s.mean), simulate.FormatMS(s.min), simulate.FormatMS(s.max))
}
