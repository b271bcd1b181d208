package vm

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// Process is one attempt's VM: its QEMU process, launched or adopted.
// Done closes when QEMU exits; ExitCode and Console are then the guest's
// word, read from its console log.
type Process struct {
	pid     int
	start   uint64
	console string
	cmd     *exec.Cmd // nil when adopted
	done    chan struct{}
	// memoryMiB is the guest's size; 0 when adopted (unknown).
	memoryMiB int
	// group is QEMU's cgroup (nil: none); host is what the kernel said of
	// its memory when QEMU exited.
	group  *platform.Cgroup
	host   rm.GroupMemory
	hostOK bool

	mu   sync.Mutex
	read Console
	err  error // reading the console failed
}

var _ rm.Process = (*Process)(nil)

func newProcess(pid int, console string) *Process {
	return &Process{pid: pid, console: console, done: make(chan struct{}), read: Console{ExitCode: -1}}
}

// wait reaps a launched QEMU and finishes the process.
func (p *Process) wait() {
	_ = p.cmd.Wait()
	p.finish()
}

// finish reads the console, and the cgroup's memory, once QEMU is gone,
// then closes Done.
func (p *Process) finish() {
	c, err := ReadConsole(p.console)
	var host rm.GroupMemory
	var hostErr error = errNoGroup
	if p.group != nil {
		host, hostErr = p.group.Memory()
	}
	p.mu.Lock()
	p.read, p.err = c, err
	p.host, p.hostOK = host, hostErr == nil
	p.mu.Unlock()
	close(p.done)
}

var errNoGroup = errors.New("no cgroup")

// hostMemory is what the host kernel said of the VM's cgroup at QEMU's
// exit; false without a cgroup or a memory controller.
func (p *Process) hostMemory() (rm.GroupMemory, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.host, p.hostOK
}

// PID is QEMU's.
func (p *Process) PID() int { return p.pid }

// Start is QEMU's start stamp.
func (p *Process) Start() uint64 { return p.start }

// Done closes when QEMU has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the listener's exit code as the guest reported it; -1 while
// the VM runs, or when the guest said none (it was stopped or failed
// first: Console().Error says why).
func (p *Process) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.read.ExitCode
}

// Console is what the guest reported on its console, once Done is
// closed; the error is reading the console log's.
func (p *Process) Console() (Console, error) {
	select {
	case <-p.done:
	default:
		return Console{ExitCode: -1}, errors.New("the VM still runs")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.read, p.err
}

// Stop powers the VM off: QEMU gets SIGTERM (it ends the guest at once
// and closes its disk), SIGKILL if it has not exited after grace. The
// guest gets no shutdown of its own: nothing of it outlives the attempt.
// It returns once QEMU exited or ctx ended.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.signal(sigTerm); err != nil {
		return fmt.Errorf("stop VM (QEMU pid %d): %w", p.pid, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if err := p.signal(sigKill); err != nil {
		return fmt.Errorf("kill VM (QEMU pid %d): %w", p.pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal sends sig to QEMU if it is still the process of (pid, start).
func (p *Process) signal(sig stopSignal) error {
	if p.cmd != nil {
		// Our child: its pid cannot be reused before Wait reaps it.
		err := signalPID(p.pid, sig)
		if err != nil && isGone(err) {
			return nil
		}
		return err
	}
	return signalIfSame(p.pid, p.start, sig)
}
