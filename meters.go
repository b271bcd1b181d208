package runnermanager

import "context"

// Meters is what the engine asks of the attempt meters
// (meter.AttemptMeters is the real one): an attempt's memory and usage,
// what a new attempt of a policy is expected to peak at, the sampling of
// the host's live attempts, and being told how each attempt ended.
type Meters interface {
	// CurrentRSS is the attempt's tree memory at the last sample.
	CurrentRSS(a AttemptID) (uint64, bool)
	// Peek is the attempt's usage so far: for the status, and for the
	// report of an attempt that ended.
	Peek(a AttemptID) (AttemptUsage, bool)
	// Ended tells the meters how an attempt ended, once its conclusion is
	// in the journal (again when GitHub's later word corrects it): an
	// attempt that completed a job feeds its policy's expected peak.
	Ended(a AttemptID, o Outcome)
	// ExpectedPeak is what a new attempt of p is expected to peak at: from
	// its banked peaks, else estimate.
	ExpectedPeak(p PolicyID, estimate uint64) uint64
	// SampleOnce samples the host's live attempts once and returns the
	// policies of those whose runner process is seen gone.
	SampleOnce(live LiveAttempts, host HostID) []PolicyID
	// Run samples every meter.SampleEvery until ctx ends, while wanted
	// says so (nil: always), handing exited the policy of each runner
	// process seen gone.
	Run(ctx context.Context, live LiveAttempts, host HostID, wanted func() bool, exited func(PolicyID))
}

// LiveAttempts is what the meters read of the journal: the live attempts
// of every policy a host serves (store.Store has it).
type LiveAttempts interface {
	LiveAttempts(ctx context.Context, host HostID) ([]Attempt, error)
}
