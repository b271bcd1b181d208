package fakegithub

import "time"

// What the official runner's listener (Runner.Listener, .NET) costs its
// host before it runs a job, the figures the bench prices a fake runner
// at (docs/performance.md, "What a runner costs before its job"):
//
//   - RealListenerBootCPU: the CPU time of its start (the .NET runtime's
//     start, JIT compilation of the listener, reading its configuration,
//     the TLS handshakes of its session): about 1.5 s of one core, its
//     boot being mostly CPU;
//   - RealListenerIdleRSS: its resident memory while it listens, "below
//     100 MB" (actions/runner#3796: the idle listener's RES in htop);
//     60 MiB is the middle of the few tens of MiB the listener and its
//     runtime hold here.
const (
	RealListenerBootCPU = 1500 * time.Millisecond
	RealListenerIdleRSS = 60 << 20
)

// WithRunnerCost makes every fake runner spend bootCPU of CPU time during
// its boot (its boot then lasts at least that long) and hold idleRSS bytes
// of memory, touched, from its boot to its exit, as the real listener
// does; zero values cost nothing (the default).
func WithRunnerCost(bootCPU time.Duration, idleRSS uint64) Option {
	return func(c *config) { c.bootCPU, c.idleRSS = max(bootCPU, 0), idleRSS }
}
