package runnermanager_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestJITConfigHidesItsEncoding(t *testing.T) {
	jit := rm.JITConfig{RunnerID: 42, RunnerName: "rm-abc-1", Encoded: "c2VjcmV0LWppdA=="}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("registered", "jit", jit)
	wrapped := fmt.Errorf("launch: %v", jit)
	for _, printed := range []string{fmt.Sprint(jit), fmt.Sprintf("%v %+v %s", jit, jit, jit), logs.String(), wrapped.Error()} {
		assert.NotContains(t, printed, jit.Encoded)
		assert.Contains(t, printed, "redacted")
		assert.Contains(t, printed, "rm-abc-1")
	}
}

func TestRateLimitError(t *testing.T) {
	reset := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var err error = fmt.Errorf("list runners: %w", &rm.RateLimitError{Reset: reset, Secondary: true})
	var rl *rm.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("errors.As(%v) found no *RateLimitError", err)
	}
	assert.Equal(t, reset, rl.Reset)
	assert.Contains(t, err.Error(), "secondary")
	assert.Contains(t, err.Error(), "2026-12-01T10:00:00Z")
}

func TestSessionRecordValidate(t *testing.T) {
	ok := rm.SessionRecord{ScaleSetID: 7, SessionID: "s-1", Owner: "host-a/1234"}
	assert.NoError(t, ok.Validate())
	for name, s := range map[string]rm.SessionRecord{
		"NoScaleSet": {SessionID: "s-1", Owner: "host-a"},
		"NoSession":  {ScaleSetID: 7, Owner: "host-a"},
		"NoOwner":    {ScaleSetID: 7, SessionID: "s-1"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, s.Validate(), rm.ErrInvalid)
		})
	}
}
