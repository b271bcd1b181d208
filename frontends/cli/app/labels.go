package app

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/store"
)

// implicitLabels are the labels a classic policy's runners get beside its
// own (self-hosted, OS, architecture: github.ImplicitLabels), for the OS
// and architecture of the host that owns it; none in scale-set mode, where
// jobs name the scale set.
func implicitLabels(ctx context.Context, st store.Store, p rm.Policy) []string {
	if p.Target.Mode() != rm.ModeClassic {
		return []string{}
	}
	return github.ImplicitLabels(platformOf(ctx, st, p.Host))
}

// platformOf is the Go OS and architecture of host, this one's when its
// record is missing.
func platformOf(ctx context.Context, st store.Store, host rm.HostID) (goos, goarch string) {
	if h, err := st.Host(ctx, host); err == nil && h.OS != "" {
		return h.OS, h.Arch
	}
	return runtime.GOOS, runtime.GOARCH
}

// noteLabels tells, after a classic policy is written, what its labels do
// that the user may not expect: labels given twice in another case are one
// (given are the labels as typed), and a label set of implicit labels only
// serves every job of the scope for this OS and architecture.
func (a *App) noteLabels(ctx context.Context, st store.Store, given []string, p rm.Policy) {
	if p.Target.Mode() != rm.ModeClassic {
		return
	}
	if dups := rm.DuplicateLabels(given); len(dups) > 0 {
		fmt.Fprintf(a.Stderr, "note: policy %s: GitHub's labels ignore case: %s kept once; labels %s\n",
			p.Name, strings.Join(dups, ","), strings.Join(p.Target.Labels, ","))
	}
	goos, goarch := platformOf(ctx, st, p.Host)
	if !github.OnlyImplicit(p.Target.Labels, goos, goarch) {
		return
	}
	labels := strings.Join(p.Target.Labels, ",")
	fmt.Fprintf(a.Stderr, "warning: policy %s: every runner has the labels %s (the runner adds them), so labels %s serve every job of %s asking for a self-hosted %s/%s runner; give it a label of its own, such as --labels %s,gpu, and name that in runs-on\n",
		p.Name, strings.Join(github.ImplicitLabels(goos, goarch), ","), labels, p.Target.Scope, github.OSLabel(goos), github.ArchLabel(goarch), labels)
}
