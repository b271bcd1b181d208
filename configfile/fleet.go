package configfile

import (
	"strings"
	"time"
)

// Host names this host: in a fleet every host's name must be its own, and
// two data directories on one machine (a test, a second user) would take
// the same hostname.
type Host struct {
	// Name is the host's name in status, the TUI and `policy move --host`;
	// "" takes the machine's hostname.
	Name string `toml:"name" env:"RUNNER_MANAGER_HOST_NAME"`
	// MaxJobs bounds the jobs this host runs at once, all its policies
	// together, host and fleet ones alike: for a host whose limit is not
	// memory (CPU, a licence, a shared device). 0: no bound.
	MaxJobs int `toml:"max_jobs" env:"RUNNER_MANAGER_MAX_JOBS"`
}

// Fleet says how often a host tells the fleet it is alive.
type Fleet struct {
	// Heartbeat is the interval of the host's heartbeat in a shared store;
	// a host not heard from for three of them is shown stale.
	Heartbeat Age `toml:"heartbeat" env:"RUNNER_MANAGER_HEARTBEAT"`
}

// MaxHostJobs is the largest [host] max_jobs: beyond it the bound is a
// typo, not a machine.
const MaxHostJobs = 100000

// DefaultHeartbeat is [fleet] heartbeat's default.
const DefaultHeartbeat = Age(15 * time.Second)

// The bounds of [fleet] heartbeat: more often than every 100 ms is load
// for nothing, less often than every 10 minutes leaves a dead host
// unnoticed for half an hour.
const (
	MinHeartbeat = Age(100 * time.Millisecond)
	MaxHeartbeat = Age(10 * time.Minute)
)

func (c *File) validateFleet() error {
	if n := c.Host.Name; n != strings.TrimSpace(n) || strings.ContainsAny(n, "\n\r\t") || len(n) > 255 {
		return c.errAt("host.name", "%q is not a host name (no surrounding spaces or control characters, at most 255 bytes)", n)
	}
	if n := c.Host.MaxJobs; n < 0 || n > MaxHostJobs {
		return c.errAt("host.max_jobs", "%d is not between 0 (no bound) and %d", n, MaxHostJobs)
	}
	if h := c.Fleet.Heartbeat; h < MinHeartbeat || h > MaxHeartbeat {
		return c.errAt("fleet.heartbeat", "%s is outside %s to %s", h, MinHeartbeat, MaxHeartbeat)
	}
	return nil
}
