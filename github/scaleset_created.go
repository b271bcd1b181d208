package github

import (
	"context"
	"fmt"
	"net/http"

	"github.com/actions/scaleset"

	rm "github.com/runner-manager/runner-manager"
)

// recordCreated records a scale set this target just created, when its
// journal keeps scale sets (rm.ScaleSetJournal): the policy's removal
// then deletes it, and only it. A failed write is logged, not retried:
// the scale set serves all the same, and is then only left behind at the
// policy's removal, as one the manager found would be.
func (t *ScaleSetTarget) recordCreated(ctx context.Context, s *scaleset.RunnerScaleSet) {
	j, ok := t.opts.Journal.(rm.ScaleSetJournal)
	if !ok || s == nil {
		return
	}
	rec := rm.ScaleSetRecord{ScaleSetID: s.ID, Name: t.target.ScaleSet, Scope: t.target.Scope.String(), HostID: t.opts.HostID}
	if err := j.RecordScaleSet(ctx, rec); err != nil {
		t.log.Warn("cannot record in the journal that this manager created the scale set; removing its policy will leave it at GitHub",
			"id", s.ID, "err", err)
	}
}

// DeleteScaleSet deletes the scale set id of scope at GitHub
// (DELETE _apis/runtime/runnerscalesets/{id}, answered 204:
// actions/scaleset v0.4.0 client.go:494). One already gone (404) is not
// an error: there is nothing left to delete.
func (c *Client) DeleteScaleSet(ctx context.Context, scope rm.Scope, id int) error {
	target, err := rm.NewScaleSetTarget(scope, "", "scale-set")
	if err != nil {
		return err
	}
	t, err := newScaleSetTarget(c, target, ScaleSetOptions{})
	if err != nil {
		return err
	}
	return t.deleteScaleSet(ctx, t.ss, fmt.Sprintf("delete scale set %d in %s", id, scope), id)
}

// deleteScaleSet deletes scale set id with ss (204: actions/scaleset
// v0.4.0 client.go:494, which takes any other status for a failure). A
// 404, the service's answer for what it does not hold, is taken for a
// scale set already gone: nothing is left to delete, and doctor --fix or
// a second policy rm must not fail on it.
func (t *ScaleSetTarget) deleteScaleSet(ctx context.Context, ss *scaleset.Client, action string, id int) error {
	status, err := t.call(ctx, action, func(ctx context.Context) error { return ss.DeleteRunnerScaleSet(ctx, id) })
	if err != nil && status != http.StatusNotFound {
		return err
	}
	return nil
}
