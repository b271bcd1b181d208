package status_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

func TestRunnerSummary(t *testing.T) {
	days := func(n int) *int { return &n }
	at := time.Date(2026, 12, 2, 6, 12, 0, 0, time.UTC)
	ends := at.Add(-time.Hour)
	id := rm.NewAttemptID()
	tests := []struct {
		name string
		in   *status.Runner
		want string
	}{
		{"Nil", nil, ""},
		{"Plain", &status.Runner{Version: "2.330.0", AutoUpdate: true}, "2.330.0 · updates on"},
		{"DaysLeft", &status.Runner{Version: "2.330.0", AutoUpdate: true, DaysLeft: days(12), Latest: "2.331.0"},
			"2.330.0 (12 days left before GitHub refuses it) · updates on · latest 2.331.0"},
		{"OneDay", &status.Runner{Version: "2.330.0", DaysLeft: days(1)}, "2.330.0 (1 day left before GitHub refuses it) · updates off"},
		{"Refused", &status.Runner{Version: "2.330.0", AutoUpdate: true, DaysLeft: days(-1), RuntimeEnds: &ends, Latest: "2.331.0", Trial: "2.331.0", TrialAttempt: id},
			"2.330.0 (refused by GitHub since 2026-12-02) · updates on · 2.331.0 on trial (attempt " + id.String() + ")"},
		{"Bad", &status.Runner{Version: "2.330.0", AutoUpdate: true, Latest: "2.331.0",
			Bad: &status.RunnerUpdateFailure{Version: "2.331.0", At: at, Reason: "checksum mismatch", RetryAt: at.Add(6 * time.Hour)}},
			"2.330.0 · updates on · update to 2.331.0 failed at 06:12: checksum mismatch; retried at 12:12 or with a newer release"},
		{"NoneInstalled", &status.Runner{AutoUpdate: true}, "none installed · updates on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.in.Summary(time.UTC)) })
	}
}
