package fakegithub

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPacedWriter: the content routes send at their rate: 100 KiB at
// 50 KiB/s take two seconds (virtual time), unthrottled none, and every
// byte is counted.
func TestPacedWriter(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate int64
		want time.Duration
	}{
		{"Paced", 50 << 10, 2 * time.Second},
		{"Unthrottled", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var served atomic.Int64
				var buf bytes.Buffer
				p := &pacedWriter{ctx: context.Background(), w: &buf, rate: tc.rate, start: time.Now(), served: &served, closed: make(chan struct{})}
				began := time.Now()
				n, err := p.Write(make([]byte, 100<<10))
				assert.NoError(t, err)
				assert.Equal(t, 100<<10, n)
				assert.Equal(t, tc.want, time.Since(began))
				assert.Equal(t, int64(100<<10), served.Load())
			})
		})
	}
}
