package fakerunner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// TestBootWaitsTheDelay: the listener waits out the boot delay its
// configuration carries (or Config.BootDelay, which wins) before it
// connects, none without one, and a stop during the boot ends it.
func TestBootWaitsTheDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     time.Duration
		fileMS  int64
		want    time.Duration
		stopped bool
	}{
		{name: "None"},
		{name: "FromItsConfiguration", fileMS: 1500, want: 1500 * time.Millisecond},
		{name: "ConfigWins", cfg: 3 * time.Second, fileMS: 1500, want: 3 * time.Second},
		{name: "StoppedDuringItsBoot", fileMS: 10_000, want: time.Second, stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &listener{cfg: Config{BootDelay: tc.cfg}, runner: runnerproto.RunnerFile{FakeBootDelayMS: tc.fileMS}}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.stopped {
					time.AfterFunc(time.Second, cancel)
				}
				began := time.Now()
				ok := l.boot(ctx)
				assert.Equal(t, !tc.stopped, ok)
				assert.Equal(t, tc.want, time.Since(began), "virtual time")
			})
		})
	}
}
