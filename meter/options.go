package meter

import (
	"log/slog"

	rm "github.com/runner-manager/runner-manager"
)

// Option configures New.
type Option func(*options)

type options struct {
	log        *slog.Logger
	hostMemory uint64
	groups     Groups
	memory     []rm.MemoryContainer
}

// WithLogger sets where the meters warn (a peaks file that is corrupt or
// cannot be kept): the daemon's configured logger. Default slog.Default().
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithHostMemory refuses, when the peaks file is loaded, peaks of 0 or
// above bytes (the host's total memory): no job of this host had them.
func WithHostMemory(bytes uint64) Option { return func(o *options) { o.hostMemory = bytes } }
