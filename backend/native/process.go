package native

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// childProcess is a runner this launcher started: Wait tells of its exit.
type childProcess struct {
	pid   int
	start uint64
	cmd   *exec.Cmd
	done  chan struct{}
	code  int // written before done is closed
}

var _ rm.Process = (*childProcess)(nil)

func (p *childProcess) wait() {
	awaitChild(p.pid) // in the poller, holding no thread while the runner lives
	_ = p.cmd.Wait()
	p.code = exitCode(p.cmd.ProcessState)
	close(p.done)
}

func (p *childProcess) PID() int              { return p.pid }
func (p *childProcess) Start() uint64         { return p.start }
func (p *childProcess) Done() <-chan struct{} { return p.done }

// ExitCode is the listener's exit code; on Unix a death by signal N gives
// 128+N, as a shell reports it. -1 before it exited.
func (p *childProcess) ExitCode() int {
	select {
	case <-p.done:
		return p.code
	default:
		return -1
	}
}

// Stop sends SIGTERM to the process group, SIGKILL after grace, and returns
// once the listener exited or ctx ended. Whatever is left of the group when
// the listener exits is killed. A process that already exited is left alone.
func (p *childProcess) Stop(ctx context.Context, grace time.Duration) error {
	return stopGroup(ctx, p.pid, p.done, grace, func() bool { return true })
}

// adoptedProcess is a runner started before a restart, watched by a pidfd or
// by polling.
type adoptedProcess struct {
	pid   int
	start uint64
	done  <-chan struct{}
}

var _ rm.Process = (*adoptedProcess)(nil)

func (p *adoptedProcess) PID() int              { return p.pid }
func (p *adoptedProcess) Start() uint64         { return p.start }
func (p *adoptedProcess) Done() <-chan struct{} { return p.done }

// ExitCode is always -1: the manager is not the parent of an adopted runner
// and the OS does not tell it the status.
func (p *adoptedProcess) ExitCode() int { return -1 }

// Stop signals the process group as for a child, each signal only while
// (pid, start) is still the adopted process.
func (p *adoptedProcess) Stop(ctx context.Context, grace time.Duration) error {
	return stopGroup(ctx, p.pid, p.done, grace, func() bool { return platform.Alive(p.pid, p.start) })
}

// stopGroup is the shared Stop: terminate, wait grace, kill, wait. still
// says whether pid still names the process (checked before each signal).
func stopGroup(ctx context.Context, pid int, done <-chan struct{}, grace time.Duration, still func() bool) error {
	select {
	case <-done:
		return nil
	default:
	}
	if !still() {
		return nil
	}
	if err := terminateGroup(pid); err != nil {
		return fmt.Errorf("stop runner pid %d: %w", pid, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		_ = killGroup(pid) // what the listener left behind
		return nil
	case <-t.C:
	case <-ctx.Done():
		return fmt.Errorf("stop runner pid %d: %w", pid, ctx.Err())
	}
	if still() {
		if err := killGroup(pid); err != nil {
			return fmt.Errorf("stop runner pid %d: %w", pid, err)
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop runner pid %d: %w", pid, ctx.Err())
	}
}
