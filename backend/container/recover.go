package container

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
)

// Container is a runner container as the engine lists it.
type Container struct {
	ID   string
	Name string
	// Attempt is the attempt its label names (zero if the label is not an
	// attempt id).
	Attempt rm.AttemptID
	// State is the engine's word: "created", "running", "exited", …
	State   string
	Running bool
	Created time.Time
}

// Containers lists the runner containers labelled as host's, running or
// not, oldest first as the engine gives them.
func (e *Engine) Containers(ctx context.Context, host rm.HostID) ([]Container, error) {
	if host.IsZero() {
		return nil, errors.New("list runner containers: no host id")
	}
	f := client.Filters{}.
		Add("label", LabelManaged+"=true").
		Add("label", LabelHost+"="+host.String())
	res, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, engineErr("list runner containers", err)
	}
	out := make([]Container, 0, len(res.Items))
	for _, s := range res.Items {
		// The engine filtered by label; a compatible engine that ignores a
		// filter must not make another host's container ours.
		if s.Labels[LabelManaged] != "true" || s.Labels[LabelHost] != host.String() {
			continue
		}
		a, _ := rm.ParseAttemptID(s.Labels[LabelAttempt])
		name := ""
		if len(s.Names) > 0 {
			name = strings.TrimPrefix(s.Names[0], "/")
		}
		out = append(out, Container{
			ID: s.ID, Name: name, Attempt: a,
			State: string(s.State), Running: s.State == container.StateRunning,
			Created: time.Unix(s.Created, 0),
		})
	}
	return out, nil
}

// RemoveLeftovers removes host's runner containers whose attempt is not
// live (live says, from the journal), running or not, and returns those it
// removed. After a restart, re-adopt the live attempts first (Adopt), then
// call this for the rest. A container that cannot be removed is reported
// in the joined error; the others are still removed.
func (e *Engine) RemoveLeftovers(ctx context.Context, host rm.HostID, live func(rm.AttemptID) bool) ([]Container, error) {
	list, err := e.Containers(ctx, host)
	if err != nil {
		return nil, err
	}
	var removed []Container
	var errs []error
	for _, c := range list {
		if !c.Attempt.IsZero() && live(c.Attempt) {
			continue
		}
		err := e.removeContainer(ctx, c.ID)
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove leftover container %s: %w", c.Name, engineErr("remove", err)))
			continue
		}
		removed = append(removed, c)
	}
	return removed, errors.Join(errs...)
}
