package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrLevel(t *testing.T) {
	assert.Equal(t, slog.LevelDebug, errLevel(fmt.Errorf("record: %w", context.Canceled)), "the stop")
	assert.Equal(t, slog.LevelError, errLevel(errors.New("disk I/O error")))
	assert.Equal(t, slog.LevelError, errLevel(context.DeadlineExceeded), "a timeout is a failure")
}
