package github

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
)

// DeleteSession deletes one message session of a scale set at GitHub, by
// its id, with a fresh Actions service admin token for scope: for a session
// whose manager is gone (doctor --fix). nil when it is already gone.
func (c *Client) DeleteSession(ctx context.Context, scope rm.Scope, scaleSetID int, sessionID string) error {
	return c.deleteSession(ctx, scope, scaleSetID, sessionID)
}
