package metrics

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is the runner_manager_build_info gauge: always 1, labelled
// with the module version and the VCS commit this program was built from,
// so a dashboard tells which build each host runs.
func buildInfo() prometheus.Collector {
	version, commit := buildLabels(debug.ReadBuildInfo())
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ns, Name: "build_info",
		Help:        "The build of this program: module version and VCS commit (value 1).",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit},
	})
	g.Set(1)
	return g
}

// buildLabels reads the version and commit of a build, "unknown" where
// the build does not tell.
func buildLabels(bi *debug.BuildInfo, ok bool) (version, commit string) {
	version, commit = "unknown", "unknown"
	if !ok || bi == nil {
		return version, commit
	}
	if v := bi.Main.Version; v != "" {
		version = v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			commit = s.Value
		}
	}
	return version, commit
}
