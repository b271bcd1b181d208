package meter

import (
	"log/slog"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Option configures New.
type Option func(*options)

type options struct {
	log        *slog.Logger
	hostMemory uint64
	groups     []rm.GroupMeter
	// groupMemory are the groups' launchers that hold memory too, asked
	// before memory.
	groupMemory []rm.MemoryContainer
	memory      []rm.MemoryContainer
	observe     func([]Sample)
}

// WithLogger sets where the meters warn (a peaks file that is corrupt or
// cannot be kept): the daemon's configured logger. Default slog.Default().
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithHostMemory refuses, when the peaks file is loaded, peaks of 0 or
// above bytes (the host's total memory): no job of this host had them.
func WithHostMemory(bytes uint64) Option { return func(o *options) { o.hostMemory = bytes } }

// Sample is one look at one attempt, as an observer (WithObserver) is told
// of it.
type Sample struct {
	Attempt rm.AttemptID
	Policy  rm.PolicyID
	At      time.Time
	// RSSBytes is the attempt's memory at this look.
	RSSBytes uint64
	// CPUUsed is the CPU time the attempt used from its first look to
	// this one: only increases of its total count, so it never goes down.
	CPUUsed time.Duration
	// Usage is the attempt's figures so far (what Peek answers).
	Usage rm.AttemptUsage
}

// WithObserver tells observe, after every pass that could read the
// process table, of each attempt that pass sampled (the job report keeps
// each job's figures current from them). observe runs on the pass's
// goroutine, outside the meters' locks: it may block the next pass, not
// the loops.
func WithObserver(observe func([]Sample)) Option { return func(o *options) { o.observe = observe } }
