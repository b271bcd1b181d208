package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store"
)

// scaleSets finds the scale sets this host's manager created at GitHub
// that no policy in force serves any more ("scale-sets"): left by a
// policy's removal that could not reach GitHub. fix deletes them at GitHub
// and forgets them; a daemon running does not matter (no policy serves
// them). Scale sets the manager found, or that another host created, are
// never touched.
func scaleSets(ctx context.Context, st store.Store, client *github.Client, host rm.Host, fix bool) Check {
	const name = "scale-sets"
	orphans, err := policyedit.OrphanScaleSets(ctx, st)
	if err != nil {
		return warn(name, "scale sets created", err.Error())
	}
	var mine []rm.ScaleSetRecord
	for _, s := range orphans {
		if s.HostID == host.ID.String() {
			mine = append(mine, s)
		}
	}
	what := fmt.Sprintf("scale sets created by this host and served by no policy: %d", len(mine))
	if len(mine) == 0 {
		return ok(name, what)
	}
	if !fix {
		var names []string
		for _, s := range mine {
			names = append(names, fmt.Sprintf("%q (id %d) in %s, created %s", s.Name, s.ScaleSetID, s.Scope, s.CreatedAt.Local().Format(time.DateTime)))
		}
		return warn(name, what, "left at GitHub by a removed policy: delete them with doctor --fix: "+strings.Join(names, ", "))
	}
	removed := 0
	var errs []string
	for _, s := range mine {
		scope, err := rm.ParseScope(s.Scope)
		if err == nil {
			err = client.DeleteScaleSet(ctx, scope, s.ScaleSetID)
		}
		if err == nil {
			err = st.ForgetScaleSet(ctx, s.ScaleSetID)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q (id %d): %v", s.Name, s.ScaleSetID, err))
			continue
		}
		removed++
	}
	what = fmt.Sprintf("%s: deleted %d", what, removed)
	if removed < len(mine) {
		return fail(name, what, strings.Join(errs, "; "))
	}
	return ok(name, what)
}
