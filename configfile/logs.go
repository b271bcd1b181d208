package configfile

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Logs bounds the runner logs kept after each attempt (<data>/logs/):
// none older than MaxAge, at most MaxSize in all, the oldest removed first.
type Logs struct {
	// MaxAge: "14d", "36h"; 0 keeps them whatever their age.
	MaxAge Age `toml:"max_age" env:"RUNNER_MANAGER_LOGS_MAX_AGE"`
	// MaxSize: "1GiB"; 0 keeps them whatever their size.
	MaxSize Size `toml:"max_size" env:"RUNNER_MANAGER_LOGS_MAX_SIZE"`
}

// The default retention of kept runner logs.
const (
	DefaultLogsMaxAge  = Age(14 * 24 * time.Hour)
	DefaultLogsMaxSize = Size(1 << 30)
)

// DefaultLogs is the [logs] section's defaults.
func DefaultLogs() Logs { return Logs{MaxAge: DefaultLogsMaxAge, MaxSize: DefaultLogsMaxSize} }

// Age is a duration written in days or as Go writes durations: "14d",
// "36h", "90m"; a bare 0 is none.
type Age time.Duration

// ParseAge parses an age such as "14d"; see Age. Errors wrap
// runnermanager.ErrInvalid.
func ParseAge(s string) (Age, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(t, "d"); ok {
		if days, err := strconv.ParseUint(n, 10, 16); err == nil {
			return Age(time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(t); err == nil && d >= 0 {
		return Age(d), nil
	}
	return 0, fmt.Errorf("%w: age %q is not a number of days (14d) or a duration (36h, 90m)", rm.ErrInvalid, s)
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Age) UnmarshalText(b []byte) error {
	v, err := ParseAge(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// MarshalText writes whole days as "14d", else as a Go duration.
func (a Age) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

func (a Age) String() string {
	d := time.Duration(a)
	if d != 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
