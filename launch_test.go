package runnermanager_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestLaunchSpecHidesTheJITConfig(t *testing.T) {
	spec := rm.LaunchSpec{Attempt: rm.NewAttemptID(), Policy: rm.Policy{Name: "home"}, RunnerDir: "/opt/runner", JITConfig: "c2VjcmV0LWppdA=="}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("launch", "spec", spec)
	for _, printed := range []string{fmt.Sprint(spec), fmt.Sprintf("%v %+v %s", spec, spec, spec), logs.String()} {
		assert.NotContains(t, printed, spec.JITConfig)
		assert.Contains(t, printed, "redacted")
		assert.Contains(t, printed, "home")
	}
}

func TestLaunchFailureReason(t *testing.T) {
	sentinel := rm.NewReasonError(rm.ImageMissing, "image missing")
	for name, tc := range map[string]struct {
		err  error
		want rm.FailureReason
	}{
		"Plain":   {errors.New("no runner"), rm.LaunchFailed},
		"Wrapped": {fmt.Errorf("launch attempt x: %w: the engine says so", sentinel), rm.ImageMissing},
		"Joined":  {errors.Join(errors.New("a"), fmt.Errorf("b: %w", rm.NewReasonError(rm.BackendUnavailable, "down"))), rm.BackendUnavailable},
		"Nil":     {nil, rm.LaunchFailed},
	} {
		t.Run(name, func(t *testing.T) {
			if got := rm.LaunchFailureReason(tc.err); got != tc.want {
				t.Fatalf("LaunchFailureReason(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", sentinel), sentinel) {
		t.Fatal("a reason error is a sentinel errors.Is finds")
	}
}
