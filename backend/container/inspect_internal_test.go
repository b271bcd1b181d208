package container

import (
	"context"
	"errors"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
)

// TestInspectStarted: a container just started whose inspection Podman
// fails because its process has just exited is asked again, and taken as
// exited if it keeps saying so; any other error is returned at once.
func TestInspectStarted(t *testing.T) {
	gone := errors.New("Error response from daemon: open /proc/3207/cgroup: no such process")
	other := errors.New("Error response from daemon: permission denied")
	ok := client.ContainerInspectResult{Container: container.InspectResponse{ID: "c1"}}
	for _, tc := range []struct {
		name    string
		answers []error // nil: the inspection succeeds
		calls   int
		want    client.ContainerInspectResult
		err     error
	}{
		{"at once", []error{nil}, 1, ok, nil},
		{"after the engine caught up", []error{gone, gone, nil}, 3, ok, nil},
		{"gone for good: exited", []error{gone, gone, gone, gone, gone}, inspectStartedTries, client.ContainerInspectResult{}, nil},
		{"another error", []error{other}, 1, client.ContainerInspectResult{}, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := inspectStarted(t.Context(), func(context.Context) (client.ContainerInspectResult, error) {
				e := tc.answers[min(calls, len(tc.answers)-1)]
				calls++
				if e != nil {
					return client.ContainerInspectResult{}, e
				}
				return ok, nil
			})
			assert.Equal(t, tc.calls, calls)
			assert.Equal(t, tc.err, err)
			assert.Equal(t, tc.want, got)
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := inspectStarted(ctx, func(context.Context) (client.ContainerInspectResult, error) {
		return client.ContainerInspectResult{}, gone
	})
	assert.ErrorIs(t, err, gone, "a launch given up on says why")
}
