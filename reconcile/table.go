package reconcile

import (
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// stopReason says why the manager stopped (or deregistered) a runner, so
// the pass that sees it exit concludes it with the right outcome.
type stopReason string

const (
	stopNone         stopReason = ""
	stopScaleDown    stopReason = "scaled down"
	stopIdleTimeout  stopReason = "idle timeout"
	stopStartTimeout stopReason = "start timeout"
	stopZombie       stopReason = "zombie"
	stopHung         stopReason = "hung after its job ended"
	stopUser         stopReason = "stopped by a user"
	stopDrain        stopReason = "drained"
	stopShutdown     stopReason = "manager stopped"
)

// runtime is what this process knows of one attempt beyond the journal:
// its process, whether a launch of it is in flight, why it was stopped.
// It lives in a table shared by every loop of a supervisor, so a loop
// restarted for a policy edit keeps its children's exit codes.
type runtime struct {
	proc rm.Process
	// inflight: a launch of this attempt is running in this process; the
	// pass must not mistake its pending/registering row for a crash leftover.
	inflight bool
	// exitSeenAt: when a pass first saw the process gone (or found it gone
	// at adoption); the clock for waiting for GitHub's word on a job.
	exitSeenAt time.Time
	// goneAtAdopt: the process was already gone when this manager looked
	// for it after a restart; its exit code is unknown.
	goneAtAdopt bool
	// stop is why the manager stopped or deregistered it.
	stop stopReason
	// stopping: a Stop of its process was started.
	stopping bool
	// deregistered: its registration was removed by the manager.
	deregistered bool
	// refusedBusy: GitHub refused to remove its registration: a job was
	// just assigned to it. A stop leaves it running.
	refusedBusy bool
	// jobCompleted: GitHub said its job completed; jobCompletedAt is when
	// this process first heard it (the clock of HungGrace).
	jobCompleted   bool
	jobCompletedAt time.Time
	// missingSince: when a runner list first lacked its registration.
	missingSince time.Time
	// peakRSS is the largest RSS the passes saw, for the status.
	peakRSS uint64
	// stopped are closed once the attempt is concluded (StopAttempt waits).
	stopped []chan struct{}
	// spare: the attempt is one of its loop's warm spares (spares.go);
	// admission counts it at spareCost, and a job that needs its memory
	// sets yield and calls nudge (its loop's), whose next pass stops it.
	spare     bool
	spareCost uint64
	yield     bool
	nudge     func()
}

// table holds the runtime of the live attempts this process knows.
type table struct {
	mu sync.Mutex
	m  map[rm.AttemptID]*runtime
}

func newTable() *table { return &table{m: make(map[rm.AttemptID]*runtime)} }

// with runs f on the attempt's runtime (created if missing) under the lock.
func (t *table) with(id rm.AttemptID, f func(r *runtime)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.m[id]
	if r == nil {
		r = &runtime{}
		t.m[id] = r
	}
	f(r)
}

// update runs f on the attempt's runtime under the lock, if it has one.
func (t *table) update(id rm.AttemptID, f func(r *runtime)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.m[id]; r != nil {
		f(r)
	}
}

// get returns a copy of the attempt's runtime.
func (t *table) get(id rm.AttemptID) (runtime, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.m[id]
	if !ok {
		return runtime{}, false
	}
	return *r, true
}

// process returns the attempt's process, if one was launched or adopted.
func (t *table) process(id rm.AttemptID) rm.Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.m[id]; r != nil {
		return r.proc
	}
	return nil
}

// exited reports whether the attempt's process is known and has exited.
func (t *table) exited(id rm.AttemptID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.m[id]
	if r == nil {
		return false
	}
	if r.goneAtAdopt {
		return true
	}
	if r.proc == nil {
		return false
	}
	select {
	case <-r.proc.Done():
		return true
	default:
		return false
	}
}

// isInflight reports whether a launch of id is running in this process.
func (t *table) isInflight(id rm.AttemptID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.m[id]
	return r != nil && r.inflight
}

// forget drops a concluded attempt, releasing whoever waits for its stop.
func (t *table) forget(id rm.AttemptID) {
	t.mu.Lock()
	r := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if r != nil {
		for _, c := range r.stopped {
			close(c)
		}
	}
}
