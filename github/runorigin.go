package github

import (
	"context"
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// ForkRun says whether workflow run runID of repo ("owner/name") came
// from a fork: its head repository is not repo (GitHub's REST "get a
// workflow run": head_repository and repository). One request per run;
// a run whose head repository GitHub does not name counts as a fork.
func (c *Client) ForkRun(ctx context.Context, repo string, runID int64) (bool, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || runID <= 0 {
		return true, fmt.Errorf("is run %d of %q from a fork: %w", runID, repo, rm.ErrInvalid)
	}
	run, _, err := c.gh.Actions.GetWorkflowRunByID(ctx, owner, name, runID)
	if err != nil {
		return true, fmt.Errorf("is run %d of %s from a fork: %w", runID, repo, err)
	}
	head := run.GetHeadRepository().GetFullName()
	return head == "" || !strings.EqualFold(head, repo), nil
}

// ForkRun asks the target's client (Client.ForkRun).
func (t *ClassicTarget) ForkRun(ctx context.Context, repo string, runID int64) (bool, error) {
	return t.c.ForkRun(ctx, repo, runID)
}

// ForkRun asks the target's client (Client.ForkRun).
func (t *ScaleSetTarget) ForkRun(ctx context.Context, repo string, runID int64) (bool, error) {
	return t.c.ForkRun(ctx, repo, runID)
}

// ForkRun asks the target's client (Client.ForkRun).
func (r *ScaleSetRegistrations) ForkRun(ctx context.Context, repo string, runID int64) (bool, error) {
	return r.t.ForkRun(ctx, repo, runID)
}

var (
	_ rm.RunOrigins = (*ClassicTarget)(nil)
	_ rm.RunOrigins = (*ScaleSetTarget)(nil)
	_ rm.RunOrigins = (*ScaleSetRegistrations)(nil)
)
