package reconcile

import (
	"context"
	"errors"
	"log/slog"
)

// errLevel is the level to log a failure err at: DEBUG when it is only
// the stop of the manager (a canceled context), else ERROR. A clean stop
// logs no ERROR.
func errLevel(err error) slog.Level {
	if errors.Is(err, context.Canceled) {
		return slog.LevelDebug
	}
	return slog.LevelError
}
