package github

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
)

// ScaleSetRegistrations looks up and removes the runner registrations of a
// scale set at the Actions service without finding, creating or updating
// the scale set, and without a message session: doctor's view, which must
// change nothing at GitHub but leftovers.
//
// The Actions service keeps runners per scope, not per scale set: its
// lookups and its removal name pool 0 (actions/scaleset v0.4.0 client.go:24
// runnerEndpoint "_apis/distributedtask/pools/0/agents"; GetRunner
// client.go:641, GetRunnerByName client.go:671, RemoveRunner client.go:708),
// so they need no scale set id, and a scale set GitHub deleted does not
// hide a runner left busy in it. The service has no call that lists runners
// (client.go's only runner calls are those three), and the REST list never
// holds scale-set runners: a registration is found only by a name or an id
// the caller knows.
//
// LookupRunner and RemoveRunner are ScaleSetTarget's own, the ones the
// loops use: a 401 renews the admin token once; a busy runner's removal is
// refused with ErrRunnerBusy.
type ScaleSetRegistrations struct{ t *ScaleSetTarget }

// NewScaleSetRegistrations returns the registrations of target's scale set;
// it calls nothing yet. opts' Logger and NamePrefix are used; the rest is
// for targets that serve.
func NewScaleSetRegistrations(c *Client, target rm.ScaleTarget, opts ScaleSetOptions) (*ScaleSetRegistrations, error) {
	t, err := newScaleSetTarget(c, target, opts)
	if err != nil {
		return nil, err
	}
	return &ScaleSetRegistrations{t: t}, nil
}

// LookupRunner asks the Actions service for one runner: by id, or by name
// when id is 0; found is false when it has none.
func (r *ScaleSetRegistrations) LookupRunner(ctx context.Context, id int64, name string) (rm.Runner, bool, error) {
	return r.t.LookupRunner(ctx, id, name)
}

// RemoveRunner removes a registration: ErrRunnerBusy while it runs a job
// (GitHub refuses), nil when it is already gone.
func (r *ScaleSetRegistrations) RemoveRunner(ctx context.Context, id int64) error {
	return r.t.RemoveRunner(ctx, id)
}
