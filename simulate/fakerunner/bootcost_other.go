//go:build !unix

package fakerunner

import "time"

var started = time.Now()

// processCPU is the wall time since the process started, where its CPU
// time is not read: the burn then lasts its wall time.
func processCPU() time.Duration { return time.Since(started) }
