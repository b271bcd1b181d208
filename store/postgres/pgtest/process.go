package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// process is a running server: the postmaster, a child of this process.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startProcess starts path as owner. Where the system allows (Linux), the
// server gets a signal to quit when the thread that started it ends, so a
// test binary killed in the middle (a timeout, kill -9) leaves no server
// behind: the goroutine that starts it stays on its thread until it exits.
func startProcess(path string, args []string, dir string, log *os.File, owner *account) (*process, error) {
	p := &process{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		cmd := exec.Command(path, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = owner.sysProcAttr(true)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.cmd = cmd
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stop asks the server for a fast shutdown (SIGINT: sessions are ended,
// then a checkpoint) and waits for it; after 30 s it is killed.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("postgres did not stop within 30 s of SIGINT and was killed")
	}
}
