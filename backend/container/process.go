package container

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// rewaitEvery is how soon a broken wait (the engine restarted, its
// connection cut) is tried again.
const rewaitEvery = 2 * time.Second

// callTimeout bounds one engine call made on the launcher's own behalf
// (an inspect after a start, a stop, a removal).
const callTimeout = 30 * time.Second

// Process is one attempt's container seen as a runner process: its PID is
// the container's init process on this host (0 when the engine's pids are
// not this host's: an engine in a VM or elsewhere), Done is closed when the
// container stops (the engine's wait API), and ExitCode is the container's,
// also for a container adopted after a restart.
type Process struct {
	e       *Engine
	id      string
	attempt rm.AttemptID
	pid     int
	start   uint64
	// oom is the launcher's own witness of an OOM kill (nil: none).
	oom *oomWatch
	// limit is the container's memory limit (0: none).
	limit uint64

	done    chan struct{}
	ended   sync.Once
	code    int    // written before done is closed
	failure error  // written before done is closed
	memory  Memory // written before done is closed
}

// Memory is what is known of a container's memory once it ended.
type Memory struct {
	// LimitBytes is the container's memory limit; 0: none.
	LimitBytes uint64
	// PeakBytes is its cgroup's peak charge, where the launcher could read
	// it (cgroup v1); 0 when unknown.
	PeakBytes uint64
	// OOMKills counts the container's processes the kernel's OOM killer
	// ended (at least 1 when the engine or the launcher's witness saw one):
	// the runner's own, or only a job's child, which the runner may have
	// survived.
	OOMKills uint64
}

var _ rm.Process = (*Process)(nil)

func newProcess(e *Engine, id string, a rm.AttemptID, pid int, start uint64) *Process {
	return &Process{e: e, id: id, attempt: a, pid: pid, start: start, done: make(chan struct{}), code: -1}
}

// PID is the container's init process on this host; 0 when unknown.
func (p *Process) PID() int { return p.pid }

// Start is the init process's start stamp (platform.StartTime): with PID,
// its identity. 0 when PID is.
func (p *Process) Start() uint64 { return p.start }

// Done is closed once the container stopped.
func (p *Process) Done() <-chan struct{} { return p.done }

// ContainerID is the engine's id of the container.
func (p *Process) ContainerID() string { return p.id }

// ExitCode is the container's exit code once Done is closed (a death by
// signal N gives 128+N, as the engine reports it); -1 before, or when the
// container vanished before its code could be read.
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
		return p.code
	default:
		return -1
	}
}

// Failure says, once Done is closed, why the container ended other than by
// its runner's own exit: an error wrapping ErrOOMKilled (the job needed
// more memory than the limit), ErrContainerGone (removed behind the
// manager's back) or ErrEngineDown (the engine stopped answering and the
// container's process is gone, its exit code unknown). nil otherwise, and
// before Done.
func (p *Process) Failure() error {
	select {
	case <-p.done:
		return p.failure
	default:
		return nil
	}
}

// Memory is what is known of the container's memory once Done is closed:
// its limit, its peak and its OOM kills. The limit alone before.
func (p *Process) Memory() Memory {
	select {
	case <-p.done:
		return p.memory
	default:
		return Memory{LimitBytes: p.limit}
	}
}

// Stop asks the engine to stop the container: SIGTERM to its init
// process, SIGKILL to every process of the container after grace (whole
// seconds, rounded up). It returns once the container stopped or ctx ended.
// A container already stopped or gone is left alone.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	secs := int(math.Ceil(max(grace, 0).Seconds()))
	_, err := p.e.cli.ContainerStop(ctx, p.id, client.ContainerStopOptions{Timeout: &secs})
	if err != nil && !isNotFound(err) {
		return engineErr(fmt.Sprintf("stop container of attempt %s", p.attempt), err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop container of attempt %s: %w", p.attempt, ctx.Err())
	}
}

// watch waits for the container to stop and closes done, with its exit
// code and failure. A broken wait is looked at and waited again; ctx ends
// the watch without closing done (the launcher closed). Beside the wait,
// the init process is watched through a pidfd: Podman's wait answers up
// to 2 s after the exit, its inspect within about 50 ms.
func (p *Process) watch(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.pid > 0 && p.start > 0 {
		if exited := pidExit(ctx, p.pid, p.start); exited != nil {
			go p.afterExit(ctx, exited)
		}
	}
	for {
		w := p.e.cli.ContainerWait(ctx, p.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case r := <-w.Result:
			p.finish(ctx, int(r.StatusCode))
			return
		case <-w.Error:
		case <-p.done:
			return
		}
		if ctx.Err() != nil {
			return
		}
		if p.settled(ctx) {
			return
		}
		t := time.NewTimer(rewaitEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// afterExit asks the engine for the container's exit code as soon as its
// init process exited, until the engine has seen the exit.
func (p *Process) afterExit(ctx context.Context, exited <-chan struct{}) {
	select {
	case <-exited:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for range 250 { // 5 s, then the wait alone
		ins, err := p.e.cli.ContainerInspect(ctx, p.id, client.ContainerInspectOptions{})
		if err == nil && ins.Container.State != nil && !ins.Container.State.Running {
			p.finish(ctx, ins.Container.State.ExitCode)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-p.done:
			return
		case <-t.C:
		}
	}
}

// finish records the container's end, once: its exit code, and whether
// the OOM killer ended it (only inspect, or the launcher's own witness,
// says).
func (p *Process) finish(ctx context.Context, code int) {
	p.ended.Do(func() { p.record(ctx, code) })
}

func (p *Process) record(ctx context.Context, code int) {
	ictx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	oom := false
	if ins, err := p.e.cli.ContainerInspect(ictx, p.id, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil {
		oom = ins.Container.State.OOMKilled
	}
	// The launcher's own witness says the cgroup ran out of memory; the
	// kill was the runner's (not only a job's child) when SIGKILL ended it.
	witnessed := p.oom.stop()
	kills, peak := p.oom.memory()
	if oom && kills == 0 {
		kills = 1
	}
	p.memory = Memory{LimitBytes: p.limit, PeakBytes: peak, OOMKills: kills}
	if witnessed && code == 128+9 {
		oom = true
	}
	if oom {
		p.failure = fmt.Errorf("attempt %s: %w (exit code %d)", p.attempt, ErrOOMKilled, code)
	}
	p.code = code
	close(p.done)
}

// end closes done with failure, the exit code unknown.
func (p *Process) end(failure error) {
	p.ended.Do(func() {
		p.oom.stop()
		kills, peak := p.oom.memory()
		p.memory = Memory{LimitBytes: p.limit, PeakBytes: peak, OOMKills: kills}
		p.failure = failure
		close(p.done)
	})
}

// settled looks at the container after a broken wait and closes done if
// it has ended; false to wait again.
func (p *Process) settled(ctx context.Context) bool {
	ictx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	ins, err := p.e.cli.ContainerInspect(ictx, p.id, client.ContainerInspectOptions{})
	switch {
	case err == nil && ins.Container.State != nil && !ins.Container.State.Running:
		p.finish(ctx, ins.Container.State.ExitCode)
		return true
	case err == nil:
		return false
	case isNotFound(err):
		p.end(fmt.Errorf("attempt %s: container %.12s: %w", p.attempt, p.id, ErrContainerGone))
		return true
	case isDown(err) && p.pid > 0 && !platform.Alive(p.pid, p.start):
		p.end(fmt.Errorf("attempt %s: its container's process exited while the engine was down, exit code unknown: %w", p.attempt, ErrEngineDown))
		return true
	}
	return false
}
