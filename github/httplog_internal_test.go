package github

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A request that failed because its context was canceled (every stop of
// the manager ends a long poll so) is not an ERROR.
func TestCanceledAtDebug(t *testing.T) {
	var buf bytes.Buffer
	log := canceledAtDebug(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), false).With("target", "t")
	stopped := &url.Error{Op: "Get", URL: "http://x/messages", Err: context.Canceled}
	log.Error("request failed", "error", stopped, "method", "GET")
	assert.Empty(t, buf.String(), "below the level once demoted")

	log.Info("refreshing token", "githubConfigUrl", "http://x/octo/app")
	assert.Empty(t, buf.String(), "the library's notes are DEBUG")
	log.Warn("retrying")
	assert.Contains(t, buf.String(), "level=WARN", "its warnings stay")

	log.Error("request failed", "error", fmt.Errorf("dial: connection refused"), "method", "GET")
	assert.Contains(t, buf.String(), "level=ERROR")
	assert.Contains(t, buf.String(), "connection refused")

	buf.Reset()
	debug := canceledAtDebug(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), false)
	debug.Error("request failed", "error", stopped)
	assert.Contains(t, buf.String(), "level=DEBUG")
	assert.Contains(t, buf.String(), "context canceled")
}
