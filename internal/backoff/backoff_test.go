package backoff_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/internal/backoff"
)

func TestCeiling(t *testing.T) {
	p := backoff.Policy{Base: time.Second, Cap: 5 * time.Second}
	var got []time.Duration
	for n := range 6 {
		got = append(got, p.Ceiling(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	assert.Equal(t, want, got)
}

func TestCeilingNoOverflow(t *testing.T) {
	p := backoff.Policy{Base: time.Hour, Cap: 1<<63 - 1}
	assert.Equal(t, time.Duration(1<<63-1), p.Ceiling(1000))
	assert.Equal(t, 2*time.Hour, p.Ceiling(1))
}

func TestAtBounds(t *testing.T) {
	p := backoff.Policy{Base: time.Second, Cap: time.Minute}
	for n := range 12 {
		lo, hi := p.At(n, 0), p.At(n, 0.999999)
		ceil := min(time.Second<<n, time.Minute)
		assert.Equal(t, ceil/2, lo, "n=%d", n)
		assert.LessOrEqual(t, hi, ceil, "n=%d", n)
		assert.Greater(t, hi, ceil*9/10, "n=%d", n)
	}
}

func TestWaitAndSpreadStayInBounds(t *testing.T) {
	p := backoff.Policy{Base: 2 * time.Millisecond, Cap: 64 * time.Millisecond}
	for n := range 10 {
		ceil := p.Ceiling(n)
		for range 100 {
			w := p.Wait(n)
			assert.GreaterOrEqual(t, w, ceil/2, "n=%d", n)
			assert.Less(t, w, ceil, "n=%d", n)
			s := p.Spread(n)
			assert.GreaterOrEqual(t, s, time.Duration(0), "n=%d", n)
			assert.Less(t, s, ceil, "n=%d", n)
		}
	}
	assert.Equal(t, time.Duration(0), backoff.Policy{}.Spread(3))
}
