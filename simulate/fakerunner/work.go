package fakerunner

import (
	"context"
	"os"
	"runtime"
	"sync"
	"time"
)

// work "runs" a job: it allocates memoryBytes and touches every page (so
// the process's resident set really grows), burns millicores of CPU, and
// holds both for d or until ctx ends.
func work(ctx context.Context, d time.Duration, memoryBytes uint64, millicores int) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mem []byte
	if memoryBytes > 0 {
		mem = make([]byte, memoryBytes)
		page := os.Getpagesize()
		for i := 0; i < len(mem); i += page {
			mem[i] = 1
		}
	}
	var wg sync.WaitGroup
	burn(ctx, &wg, millicores)
	<-ctx.Done()
	wg.Wait()
	runtime.KeepAlive(mem)
}

// burnPeriod is the duty cycle's period.
const burnPeriod = 20 * time.Millisecond

// burn spins ceil(millicores/1000) goroutines, each busy for its share of
// every period, until ctx ends.
func burn(ctx context.Context, wg *sync.WaitGroup, millicores int) {
	if millicores <= 0 {
		return
	}
	n := (millicores + 999) / 1000
	busy := time.Duration(float64(burnPeriod) * float64(millicores) / float64(n*1000))
	for range n {
		wg.Go(func() {
			x := 0
			for ctx.Err() == nil {
				start := time.Now()
				for time.Since(start) < busy {
					x++
				}
				if idle := burnPeriod - busy; idle > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(idle):
					}
				}
			}
			_ = x
		})
	}
}
