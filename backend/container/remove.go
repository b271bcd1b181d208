package container

import (
	"context"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// removeContainer removes a container and its anonymous volumes, forced so
// that a running one is killed. Podman (seen on 4.3) can refuse a forced
// remove of a container that has just stopped, while its conmon still
// tidies up: "cannot remove container … as it could not be stopped: …
// container state improper: stopped". The container is stopped, so a
// plain remove is what it needs; it is tried at once and then a few times
// more over about three seconds, while Podman finishes. A container already
// gone is the caller's to judge (isNotFound).
func (e *Engine) removeContainer(ctx context.Context, id string) error {
	_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	wait := 100 * time.Millisecond
	for try := 0; err != nil && stoppedMidCleanup(err) && try < 5; try++ {
		if _, err = e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{RemoveVolumes: true}); err == nil || !stoppedMidCleanup(err) {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
	return err
}

// stoppedMidCleanup reports whether the engine refused to remove a
// container because of the state it was caught in (Podman's
// ErrCtrStateInvalid, "container state improper").
func stoppedMidCleanup(err error) bool {
	return strings.Contains(err.Error(), "container state improper")
}
