package github

import (
	"context"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// TargetCheck is what GitHub says of a scale target before a policy
// serves it.
type TargetCheck struct {
	// RunnerGroupID is the id of the target's runner group (1, Default,
	// everywhere).
	RunnerGroupID int64
	// ScaleSetID is the id of the target's scale set where it exists
	// (scale-set mode); 0 when the manager will create it.
	ScaleSetID int
}

// CheckTarget asks GitHub whether target can be served with the client's
// credentials, changing nothing there: its scope exists and they may
// manage its runners (its runner downloads, GET
// {scope}/actions/runners/downloads, which need the runners' read
// permission), its runner group exists and, in scale-set mode, whether its
// scale set exists yet. A scope or group that does not exist is an error
// wrapping rm.ErrNotFound; refused credentials rm.ErrUnauthorized; any other
// error means GitHub did not say.
func (c *Client) CheckTarget(ctx context.Context, target rm.ScaleTarget) (TargetCheck, error) {
	if err := target.Validate(); err != nil {
		return TargetCheck{}, err
	}
	if _, err := c.RunnerDownloads(ctx, target.Scope); err != nil {
		return TargetCheck{}, err
	}
	if target.Mode() == rm.ModeClassic {
		out := TargetCheck{RunnerGroupID: 1}
		if g := target.RunnerGroup; g != "" && !strings.EqualFold(g, rm.DefaultRunnerGroup) {
			id, err := findRunnerGroup(ctx, c.gh, target.Scope, g)
			if err != nil {
				return TargetCheck{}, err
			}
			out.RunnerGroupID = id
		}
		return out, nil
	}
	t, err := newScaleSetTarget(c, target, ScaleSetOptions{})
	if err != nil {
		return TargetCheck{}, err
	}
	groupID, found, err := t.findScaleSet(ctx, t.ss)
	if err != nil {
		return TargetCheck{}, err
	}
	out := TargetCheck{RunnerGroupID: int64(groupID)}
	if found != nil {
		out.ScaleSetID = found.ID
	}
	return out, nil
}
