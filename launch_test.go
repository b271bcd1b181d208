package runnermanager_test

import (
	"bytes"
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
