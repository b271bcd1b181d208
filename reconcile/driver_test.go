package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// script is a fake pass: it records when it ran and answers from a list.
type script struct {
	mu      sync.Mutex
	start   time.Time
	at      []time.Duration
	results []Result
	errs    []error
}

func (s *script) step(ctx context.Context) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.at)
	s.at = append(s.at, time.Since(s.start))
	var res Result
	var err error
	if i < len(s.results) {
		res = s.results[i]
	} else if len(s.results) > 0 {
		res = s.results[len(s.results)-1]
	}
	if i < len(s.errs) {
		err = s.errs[i]
	}
	return res, err
}

func (s *script) runs() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.at...)
}

// drive runs a driver over s in the bubble until cancel.
func drive(t *testing.T, s *script, jitter float64) (nudge chan struct{}, cancel func()) {
	t.Helper()
	s.start = time.Now()
	nudge = make(chan struct{}, 1)
	ctx, stop := context.WithCancel(t.Context())
	d := &driver{name: "test pass", nudge: nudge, now: time.Now, base: time.Second, max: 8 * time.Second,
		jitter: func() float64 { return jitter }, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx, s.step, nil)
	}()
	return nudge, func() {
		stop()
		<-done
	}
}

func TestDriverSleepsRequeueAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{results: []Result{{RequeueAfter: 5 * time.Second}, {RequeueAfter: 60 * time.Second}}}
		_, cancel := drive(t, s, 0)
		time.Sleep(70 * time.Second)
		synctest.Wait()
		cancel()
		assert.Equal(t, []time.Duration{0, 5 * time.Second, 65 * time.Second}, s.runs())
	})
}

func TestDriverRunsAtOnceOnANudgeAndCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{results: []Result{{RequeueAfter: time.Minute}}}
		nudge, cancel := drive(t, s, 0)
		synctest.Wait()
		time.Sleep(10 * time.Second)
		for range 5 { // a burst of runner exits
			select {
			case nudge <- struct{}{}:
			default:
			}
		}
		synctest.Wait()
		cancel()
		// Nudges coalesce in a buffer of one: those before the woken pass
		// reads it make one pass; one that lands while it runs, one more.
		got := s.runs()
		require.GreaterOrEqual(t, len(got), 2)
		assert.LessOrEqual(t, len(got), 3, "five nudges, at most two passes")
		for _, at := range got[1:] {
			assert.Equal(t, 10*time.Second, at, "at once")
		}
	})
}

func TestDriverBacksOffWithJitterAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("journal locked")
		s := &script{
			results: []Result{{RequeueAfter: 3 * time.Second}},
			errs:    []error{boom, boom, boom, boom, boom, nil, boom},
		}
		_, cancel := drive(t, s, 0.5)
		time.Sleep(60 * time.Second)
		synctest.Wait()
		cancel()
		got := s.runs()
		require.GreaterOrEqual(t, len(got), 8)
		var gaps []time.Duration
		for i := 1; i < 8; i++ {
			gaps = append(gaps, got[i]-got[i-1])
		}
		// base 1 s doubling to the 8 s cap, of which half plus half the
		// jitter (0.5): 0.75, 1.5, 3, 6, 6; then success: RequeueAfter; then
		// a new failure starts over.
		assert.Equal(t, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second,
			6 * time.Second, 6 * time.Second, 3 * time.Second, 750 * time.Millisecond}, gaps)
	})
}

func TestDriverWaitsOutARateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reset := time.Now().Add(30 * time.Minute)
		rl := &githubError{&rm.RateLimitError{Reset: reset}}
		s := &script{results: []Result{{}, {RequeueAfter: time.Minute}}, errs: []error{rl}}
		_, cancel := drive(t, s, 0)
		time.Sleep(30*time.Minute + 30*time.Second)
		synctest.Wait()
		cancel()
		assert.Equal(t, []time.Duration{0, 30 * time.Minute}, s.runs(), "nothing before the reset")
	})
}

// TestDriverHoldsGitHubBack: a pass in which GitHub failed makes the
// driver hold GitHub back for a backoff from base doubling to
// rm.MaxOutageWait; a deadline of the pass cuts the wait; a pass that
// made no GitHub call (held) leaves the count as it is; one in which
// GitHub answered starts it over.
func TestDriverHoldsGitHubBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gh := &githubError{errors.New("GitHub answered 502")}
		s := &script{
			results: []Result{{}, {}, {}, {RequeueAfter: time.Second}, {}, {},
				{RequeueAfter: 3 * time.Second, GitHubAnswered: true}, {}, {RequeueAfter: time.Hour}},
			errs: []error{gh, gh, gh, gh, nil, gh, nil, gh},
		}
		_, cancel := drive(t, s, 0)
		time.Sleep(13 * time.Second)
		synctest.Wait()
		cancel()
		got := s.runs()
		require.GreaterOrEqual(t, len(got), 9)
		var gaps []time.Duration
		for i := 1; i < 9; i++ {
			gaps = append(gaps, got[i]-got[i-1])
		}
		// Half of 1, 2, 4 s; the fourth hold (2.5 s: the cap, 5 s, halved)
		// cut to the pass's 1 s deadline; the held pass waits out the rest
		// of the hold; the next failure is still the fifth; GitHub answered:
		// the pass's own 3 s, then a failure from the base again.
		assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, time.Second,
			1500 * time.Millisecond, 2500 * time.Millisecond, 3 * time.Second, 500 * time.Millisecond}, gaps)
		assert.Equal(t, 5*time.Second, min(8*time.Second, rm.MaxOutageWait), "the cap the figures assume")
	})
}

func TestDriverStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{results: []Result{{RequeueAfter: time.Hour}}}
		_, cancel := drive(t, s, 0)
		synctest.Wait()
		cancel() // returns only once run has returned
		assert.Len(t, s.runs(), 1)
	})
}
