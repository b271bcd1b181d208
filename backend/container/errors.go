package container

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
)

// The failures a caller tells apart. Errors returned by this package wrap
// one of them (errors.Is) beside the engine's own error, which says more.
// Those an attempt ends with carry its failure reason
// (rm.LaunchFailureReason): ErrEngineDown rm.BackendUnavailable,
// ErrImageMissing rm.ImageMissing, ErrPullFailed rm.ImagePullFailed,
// ErrOOMKilled rm.OOMKilled; any other launch error is rm.LaunchFailed.
var (
	// ErrEngineDown: the engine's socket did not answer (not running, wrong
	// address, no permission to its socket).
	ErrEngineDown error = rm.NewReasonError(rm.BackendUnavailable, "container engine unreachable")
	// ErrImageMissing: the image is not on the engine and the settings
	// forbid pulling it.
	ErrImageMissing error = rm.NewReasonError(rm.ImageMissing, "container image missing")
	// ErrPullFailed: the image is not on the engine and pulling it failed
	// (unknown image, registry unreachable, no credentials).
	ErrPullFailed error = rm.NewReasonError(rm.ImagePullFailed, "container image pull failed")
	// ErrStartFailed: the engine created the container but could not start
	// it (no bin/Runner.Listener in the image, a runtime refusing the
	// container's settings).
	ErrStartFailed = errors.New("container start failed")
	// ErrOOMKilled: the kernel's OOM killer ended the container: its job
	// needed more memory than the container's limit.
	ErrOOMKilled error = rm.NewReasonError(rm.OOMKilled, "container killed by the OOM killer")
	// ErrContainerGone: the attempt's container no longer exists.
	ErrContainerGone = errors.New("container is gone")
)

// engineErr wraps err from an engine call made to do what, adding
// ErrEngineDown when the engine did not answer.
func engineErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if isDown(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrEngineDown, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isDown reports whether err says the engine could not be reached.
func isDown(err error) bool {
	return client.IsErrConnectionFailed(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// isNotFound reports whether the engine answered that the object does not
// exist.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// isConflict reports whether the engine refused a name already in use.
func isConflict(err error) bool { return cerrdefs.IsConflict(err) }
