package github

import (
	"context"

	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/actions/scaleset"

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

// JITConfig registers runnerName in the scale set. A runner of the same
// name that is ours is removed and the registration retried once. A 401
// renews the admin token and a vanished scale set is found or created
// again, each before one more try.
func (t *ScaleSetTarget) JITConfig(ctx context.Context, runnerName string) (rm.JITConfig, error) {
	action := fmt.Sprintf("register runner %s in scale set %q", runnerName, t.target.ScaleSet)
	for try := 0; ; try++ {
		var jit *scaleset.RunnerScaleSetJitRunnerConfig
		status, err := t.recovering(ctx, action, true, func(ctx context.Context, ss *scaleset.Client, setID int) (err error) {
			jit, err = ss.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerName, WorkFolder: t.opts.WorkFolder}, setID)
			return err
		})
		if err == nil {
			if jit == nil || jit.Runner == nil || jit.Runner.ID == 0 || jit.EncodedJITConfig == "" {
				return rm.JITConfig{}, fmt.Errorf("%s: GitHub answered without a runner id or configuration", action)
			}
			name := jit.Runner.Name
			if name == "" {
				name = runnerName
			}
			return rm.JITConfig{RunnerID: int64(jit.Runner.ID), RunnerName: name, Encoded: jit.EncodedJITConfig}, nil
		}
		exists := errors.Is(err, scaleset.RunnerExistsError) || status == http.StatusConflict
		if !exists || try > 0 {
			return rm.JITConfig{}, err
		}
		if t.opts.NamePrefix != "" && !strings.HasPrefix(runnerName, t.opts.NamePrefix) {
			return rm.JITConfig{}, fmt.Errorf("%s: a runner of that name exists and is not ours (no %q prefix): pick another name", action, t.opts.NamePrefix)
		}
		var old *scaleset.RunnerReference
		if _, err := t.recovering(ctx, "look up runner "+runnerName, false, func(ctx context.Context, ss *scaleset.Client, _ int) (err error) {
			old, err = ss.GetRunnerByName(ctx, runnerName)
			return err
		}); err != nil {
			return rm.JITConfig{}, err
		}
		if old != nil {
			t.log.Info("removing a stale registration of the same name", "runner", runnerName, "id", old.ID)
			if err := t.RemoveRunner(ctx, int64(old.ID)); err != nil {
				return rm.JITConfig{}, fmt.Errorf("%s: the name is taken: %w", action, err)
			}
		}
	}
}

// RemoveRunner deletes a registration through the Actions service:
// ErrRunnerBusy while it runs a job, nil when it is already gone.
func (t *ScaleSetTarget) RemoveRunner(ctx context.Context, id int64) error {
	action := fmt.Sprintf("remove runner %d from scale set %q", id, t.target.ScaleSet)
	status, err := t.recovering(ctx, action, false, func(ctx context.Context, ss *scaleset.Client, _ int) error { return ss.RemoveRunner(ctx, id) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scaleset.RunnerNotFoundError), status == http.StatusNotFound:
		return nil
	case errors.Is(err, scaleset.JobStillRunningError), status == http.StatusUnprocessableEntity:
		return fmt.Errorf("%s: %w", action, rm.ErrRunnerBusy)
	}
	return err
}

// Runners cannot list a scale set's runners: GitHub's REST runner list
// does not carry them, and the Actions service lists none. It returns an
// error wrapping ErrCannotList; LookupRunner asks for one runner.
func (t *ScaleSetTarget) Runners(ctx context.Context, namePrefix string) ([]rm.Runner, error) {
	return nil, fmt.Errorf("list the runners of scale set %q: %w: scale-set runners are not in GitHub's REST runner list; look each one up", t.target.ScaleSet, rm.ErrCannotList)
}

// LookupRunner asks the Actions service (the service that registered a
// scale set's runners) for one runner: by id, or by name when id is 0. A
// 404 (or an empty lookup by name) means the registration is gone. The
// service says nothing of busy or online: the journal and job messages do.
func (t *ScaleSetTarget) LookupRunner(ctx context.Context, id int64, name string) (rm.Runner, bool, error) {
	var ref *scaleset.RunnerReference
	action := fmt.Sprintf("look up runner %d in scale set %q", id, t.target.ScaleSet)
	if id == 0 {
		action = fmt.Sprintf("look up runner %s in scale set %q", name, t.target.ScaleSet)
	}
	status, err := t.recovering(ctx, action, false, func(ctx context.Context, ss *scaleset.Client, _ int) (err error) {
		if id == 0 {
			ref, err = ss.GetRunnerByName(ctx, name)
		} else {
			ref, err = ss.GetRunner(ctx, int(id))
		}
		return err
	})
	switch {
	case err == nil && ref == nil, errors.Is(err, scaleset.RunnerNotFoundError), status == http.StatusNotFound:
		return rm.Runner{}, false, nil
	case err != nil:
		return rm.Runner{}, false, err
	}
	return rm.Runner{ID: int64(ref.ID), Name: ref.Name}, true, nil
}
