package daemon_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// queue is a demand source of an embedder's own: the jobs an in-house
// queue holds, told to the loop whenever the figure changes.
type queue struct {
	mu       sync.Mutex
	wanted   int
	capacity int // the largest maxCapacity read
	watches  int
	closed   int
	changed  chan struct{}
}

var _ rm.DemandSource = (*queue)(nil)

func newQueue() *queue { return &queue{changed: make(chan struct{}, 1)} }

func (q *queue) set(n int) {
	q.mu.Lock()
	q.wanted = n
	q.mu.Unlock()
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

func (q *queue) Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error {
	q.mu.Lock()
	q.watches++
	q.mu.Unlock()
	for {
		q.mu.Lock()
		q.capacity = max(q.capacity, maxCapacity())
		d := rm.Demand{Wanted: q.wanted, At: time.Now()}
		q.mu.Unlock()
		report(d)
		select {
		case <-ctx.Done():
			return nil
		case <-q.changed:
		}
	}
}

func (q *queue) Waiting() (error, time.Time) { return nil, time.Time{} }

func (q *queue) Close(context.Context) error {
	q.mu.Lock()
	q.closed++
	q.mu.Unlock()
	return nil
}

func (q *queue) stats() (capacity, watches, closed int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.capacity, q.watches, q.closed
}

// TestRunOwnDemandSource: an embedder's demand source drives a policy
// whose runners GitHub registers (Config.Targets gives the source, and
// nil for the registrar: GitHub's). The job the source tells of is served
// by one runner, journaled and concluded as a completed job; GitHub's own
// demand (the repository's job poll) is never asked, and the source is
// closed when the daemon stops.
func TestRunOwnDemandSource(t *testing.T) {
	w := newWorld(t)
	q := newQueue()
	var asked []string
	var mu sync.Mutex
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t),
		Loop: reconcile.LoopOptions{ScaleDownAfter: -1},
		Targets: func(_ context.Context, p rm.Policy) (rm.Registrar, rm.DemandSource, error) {
			mu.Lock()
			asked = append(asked, p.Name)
			mu.Unlock()
			if p.Name != "queued" {
				return nil, nil, nil
			}
			return nil, q, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "queued", true)

	// The job waits at GitHub for a runner of its labels; only the queue
	// says it is there.
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"self-hosted", "queued"}, Name: "from-the-queue",
		Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
	stop := start(t, d)
	require.Eventually(t, func() bool { _, watches, _ := q.stats(); return watches > 0 }, 20*time.Second, 20*time.Millisecond,
		"the loop watches the embedder's source")
	q.set(1)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	q.set(0)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 1 }, 20*time.Second, 50*time.Millisecond,
		"the attempt is concluded as a completed job")
	require.Eventually(t, func() bool {
		as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
		require.NoError(t, err)
		for _, a := range as {
			if !a.State.Ended() {
				return false
			}
		}
		return len(as) > 0
	}, 30*time.Second, 50*time.Millisecond, "every attempt of the policy ends")

	jobs := w.gh.Jobs()
	require.Len(t, jobs, 1)
	assert.Equal(t, 1, jobs[0].Starts)
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	var served rm.Attempt
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			served = a
		}
	}
	assert.Equal(t, jobs[0].RunnerName, served.RunnerName, "the journaled attempt is the runner that took the job")
	assert.NotZero(t, served.GitHubRunnerID, "GitHub registered it")
	assert.Zero(t, w.gh.Calls(fakegithub.RouteRepoRuns), "GitHub's demand is never polled")

	require.NoError(t, stop())
	capacity, _, closed := q.stats()
	assert.Equal(t, 2, capacity, "the source reads the admitted capacity (the policy's max)")
	assert.Equal(t, 1, closed, "the source is closed with its loop")
	mu.Lock()
	assert.Contains(t, asked, "queued")
	mu.Unlock()
}
