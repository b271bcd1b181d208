package policyedit

import (
	"context"
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// CreatedScaleSet is the scale set a removal of p deletes at GitHub: the
// one the journal records the managers created for p's scope and name
// (never one they found), unless another policy in force serves it too.
// found is false when there is none to delete. Call it with p in force or
// just removed: p itself never counts as another.
func CreatedScaleSet(ctx context.Context, st store.Store, p rm.Policy) (rec rm.ScaleSetRecord, found bool, err error) {
	if p.Target.Mode() != rm.ModeScaleSet {
		return rm.ScaleSetRecord{}, false, nil
	}
	recs, err := st.ScaleSets(ctx)
	if err != nil {
		return rm.ScaleSetRecord{}, false, err
	}
	i := -1
	for j, r := range recs {
		if sameScaleSet(r, p.Target) {
			i = j
		}
	}
	if i < 0 {
		return rm.ScaleSetRecord{}, false, nil
	}
	policies, err := st.Policies(ctx)
	if err != nil {
		return rm.ScaleSetRecord{}, false, fmt.Errorf("read the policies: %w", err)
	}
	for _, o := range policies {
		if o.ID != p.ID && o.Target.Mode() == rm.ModeScaleSet && sameScaleSet(recs[i], o.Target) {
			return rm.ScaleSetRecord{}, false, nil
		}
	}
	return recs[i], true, nil
}

// OrphanScaleSets are the scale sets the journal records the managers
// created that no policy in force serves: left at GitHub by a removal
// that could not reach it, or by a removal with --keep-scale-set.
func OrphanScaleSets(ctx context.Context, st store.Store) ([]rm.ScaleSetRecord, error) {
	recs, err := st.ScaleSets(ctx)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	policies, err := st.Policies(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the policies: %w", err)
	}
	var out []rm.ScaleSetRecord
	for _, r := range recs {
		used := false
		for _, p := range policies {
			if p.Target.Mode() == rm.ModeScaleSet && sameScaleSet(r, p.Target) {
				used = true
				break
			}
		}
		if !used {
			out = append(out, r)
		}
	}
	return out, nil
}

// sameScaleSet reports whether r records t's scale set: its scope and
// name, without regard to case, as GitHub names them.
func sameScaleSet(r rm.ScaleSetRecord, t rm.ScaleTarget) bool {
	return strings.EqualFold(r.Scope, t.Scope.String()) && strings.EqualFold(r.Name, t.ScaleSet)
}
