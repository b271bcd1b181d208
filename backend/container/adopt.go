package container

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// Adopt watches the attempt's container, started before a restart, if it
// still runs and its init process is still (pid, start) (when the journal
// has a pid: an engine whose pids are not this host's records none).
// rm.ErrProcessGone when the container is gone, stopped, or another
// process; an error wrapping ErrEngineDown when the engine does not answer
// (the attempt keeps its slot until it does).
func (l *Launcher) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	ctx, cancel := context.WithTimeout(l.ctx, callTimeout)
	defer cancel()
	ins, err := l.e.cli.ContainerInspect(ctx, ContainerName(a), client.ContainerInspectOptions{})
	switch {
	case isNotFound(err):
		return nil, fmt.Errorf("adopt attempt %s: %w: %w", a, ErrContainerGone, rm.ErrProcessGone)
	case err != nil:
		return nil, fmt.Errorf("adopt attempt %s: %w", a, engineErr("inspect its container", err))
	}
	c := ins.Container
	if c.Config == nil || c.Config.Labels[LabelAttempt] != a.String() || c.Config.Labels[LabelHost] != l.host.String() {
		return nil, fmt.Errorf("adopt attempt %s: container %s is not this host's attempt's: %w", a, ContainerName(a), rm.ErrProcessGone)
	}
	if c.State == nil || !c.State.Running {
		return nil, fmt.Errorf("adopt attempt %s: its container has stopped: %w", a, rm.ErrProcessGone)
	}
	p := newProcess(l.e, c.ID, a, 0, 0)
	if c.HostConfig != nil && c.HostConfig.Memory > 0 {
		p.limit = uint64(c.HostConfig.Memory)
	}
	if pid > 0 {
		if c.State.Pid != pid || !platform.Alive(pid, start) {
			return nil, fmt.Errorf("adopt attempt %s: its container's process is not pid %d any more: %w", a, pid, rm.ErrProcessGone)
		}
		p.pid, p.start = pid, start
		p.oom = watchOOM(pid)
	}
	go p.watch(l.ctx)
	return p, nil
}

// Cleanup removes the attempt's container (forced: a running one is
// killed), with its anonymous volumes. A failed attempt's runner output is
// first saved to <dir>/<attempt>.log (0600) when the launcher was made
// with WithFailedLogs. A container already gone is not an error.
func (l *Launcher) Cleanup(a rm.AttemptID, failed bool) error {
	if a.IsZero() {
		return errors.New("cleanup: no attempt named")
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	name := ContainerName(a)
	var errs []error
	if failed && l.failedLogs != "" {
		if err := l.saveLogs(ctx, name, filepath.Join(l.failedLogs, a.String()+".log")); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("cleanup attempt %s: save its runner output: %w", a, err))
		}
	}
	err := l.e.removeContainer(ctx, name)
	if err != nil && !isNotFound(err) {
		errs = append(errs, fmt.Errorf("cleanup attempt %s: %w", a, engineErr("remove container "+name, err)))
	}
	return errors.Join(errs...)
}

// saveLogs writes the container's stdout and stderr to file.
func (l *Launcher) saveLogs(ctx context.Context, name, file string) (err error) {
	rc, err := l.e.cli.ContainerLogs(ctx, name, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = stdcopy.StdCopy(f, f, rc)
	return err
}

// RanJob reports whether the attempt's runner ran a job, from the trace
// the runner leaves in its container: a Worker log in <runner dir>/_diag/
// (runnerpkg.WorkerLogPattern), read through the engine's archive API. Ask
// before Cleanup removes the container; false once it is gone, or when the
// engine does not answer. Of a stopped container it first lets the engine
// finish tearing it down (Podman: up to 2 s after the exit).
func (l *Launcher) RanJob(a rm.AttemptID) bool {
	if a.IsZero() {
		return false
	}
	ctx, cancel := context.WithTimeout(l.ctx, callTimeout)
	defer cancel()
	// Right after the exit the engine may still be tearing the container
	// down: Podman's archive API then answers an empty archive while its
	// cleanup unmounts the container. Its wait answers once that is done.
	ins, err := l.e.cli.ContainerInspect(ctx, ContainerName(a), client.ContainerInspectOptions{})
	if err != nil {
		return false
	}
	if st := ins.Container.State; st == nil || !st.Running {
		w := l.e.cli.ContainerWait(ctx, ins.Container.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-w.Result:
		case <-w.Error:
		}
	}
	// An error other than "no such container or path" is tried again.
	for try := 0; ; try++ {
		found, err := l.workerLog(ctx, a)
		if err == nil || isNotFound(err) || try == 20 || ctx.Err() != nil {
			return found
		}
		l.log.Debug("looking for the runner's Worker log", "attempt", a.String(), "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// workerLog reads <runner dir>/_diag of the attempt's container, looking
// for a Worker log.
func (l *Launcher) workerLog(ctx context.Context, a rm.AttemptID) (bool, error) {
	res, err := l.e.cli.CopyFromContainer(ctx, ContainerName(a), client.CopyFromContainerOptions{SourcePath: path.Join(l.s.runnerDir(), "_diag")})
	if err != nil {
		return false, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if ok, _ := path.Match(runnerpkg.WorkerLogPattern, path.Base(h.Name)); ok && !strings.HasSuffix(h.Name, "/") {
			return true, nil
		}
	}
}
