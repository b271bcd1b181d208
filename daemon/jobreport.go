package daemon

import (
	"log/slog"

	"github.com/runner-manager/runner-manager/backend/jobreport"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/meter"
)

// jobReportObserver keeps the job report's usage file of each native
// attempt current from the meters' samples (Config.JobReport).
func jobReportObserver(n *native.Launcher, log *slog.Logger) func([]meter.Sample) {
	t := jobreport.NewTracker(n.Root, log)
	return func(samples []meter.Sample) {
		out := make([]jobreport.Sample, len(samples))
		for i, s := range samples {
			out[i] = jobreport.Sample{Attempt: s.Attempt, At: s.At, RSSBytes: s.RSSBytes, CPUUsed: s.CPUUsed, Usage: s.Usage}
		}
		t.Observe(out)
	}
}
