package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
)

// With -own the host takes a launcher and a demand source of this
// program's own (docs/backends.md says how to write each).

// launcher is a backend of the embedder's own: backend/native's
// launcher, which it embeds (so its optional capabilities, the cgroups the
// meters read and the memory limits, stay visible), with each launch
// logged and remembered.
type launcher struct {
	*native.Launcher
	out io.Writer

	mu       sync.Mutex
	launched map[rm.AttemptID]bool
}

var (
	_ rm.Launcher        = (*launcher)(nil)
	_ rm.MemoryContainer = (*launcher)(nil)
	_ rm.RootLister      = (*launcher)(nil)
)

func newLauncher(n *native.Launcher, out io.Writer) *launcher {
	return &launcher{Launcher: n, out: out, launched: map[rm.AttemptID]bool{}}
}

// Launch starts the runner as the native launcher does, and says so. The
// spec's JITConfig is a credential: it goes to the runner, never to a log
// (spec's String and LogValue hide it).
func (l *launcher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	p, err := l.Launcher.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.launched[spec.Attempt] = true
	l.mu.Unlock()
	fmt.Fprintf(l.out, "launcher: attempt %s of policy %q started, pid %d\n", spec.Attempt, spec.Policy.Name, p.PID())
	return p, nil
}

// Launched says whether this launcher started the attempt.
func (l *launcher) Launched(a rm.AttemptID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launched[a]
}

// queue is a demand source of the embedder's own: an in-process queue
// of the jobs it handed to GitHub. Its figure is the jobs waiting or
// running; with it go the events naming the runner that started or
// completed a job, so the journal names each attempt's job and the loop
// does not count a completed job's runner out of a figure that already
// left it out. The loop watches it instead of GitHub's job poll; GitHub
// still registers the runners and hands them the jobs.
type queue struct {
	mu      sync.Mutex
	jobs    int
	events  []rm.JobEvent
	told    int // figures reported to the loop
	changed chan struct{}
}

var _ rm.DemandSource = (*queue)(nil)

func newQueue() *queue { return &queue{changed: make(chan struct{}, 1)} }

// Set says how many jobs the queue holds (waiting or running), and what
// happened to them since the last call.
func (q *queue) Set(jobs int, events ...rm.JobEvent) {
	q.mu.Lock()
	q.jobs = jobs
	q.events = append(q.events, events...)
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

// Watch reports the figure at once and at every change until ctx ends.
// maxCapacity, the runners admission would hold, is for a source that
// hands out work itself; this queue only counts.
func (q *queue) Watch(ctx context.Context, _ func() int, report func(rm.Demand)) error {
	for {
		q.mu.Lock()
		d := rm.Demand{Wanted: q.jobs, Events: q.events, At: time.Now()}
		q.events = nil
		q.told++
		q.mu.Unlock()
		report(d)
		select {
		case <-ctx.Done():
			return nil
		case <-q.changed:
		}
	}
}

// Waiting is nil: this queue never fails, so it never waits.
func (q *queue) Waiting() (error, time.Time) { return nil, time.Time{} }

// Close holds nothing to release.
func (q *queue) Close(context.Context) error { return nil }

// Told is how many figures the loop was given.
func (q *queue) Told() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.told
}
