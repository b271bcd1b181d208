package tui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/status"
)

func TestRunnerBrief(t *testing.T) {
	days := func(n int) *int { return &n }
	tests := []struct {
		name string
		in   *status.Runner
		want string
	}{
		{"None", nil, ""},
		{"NotInstalled", &status.Runner{AutoUpdate: true}, ""},
		{"DaysLeft", &status.Runner{Version: "2.330.0", AutoUpdate: true, DaysLeft: days(9)}, "  runner 2.330.0 9d left"},
		{"Refused", &status.Runner{Version: "2.330.0", AutoUpdate: true, DaysLeft: days(-1), Trial: "2.331.0"}, "  runner 2.330.0 refused · 2.331.0 on trial"},
		{"Failed", &status.Runner{Version: "2.330.0", AutoUpdate: true, Bad: &status.RunnerUpdateFailure{Version: "2.331.0", At: time.Now()}}, "  runner 2.330.0 · update 2.331.0 failed"},
		{"Off", &status.Runner{Version: "2.330.0"}, "  runner 2.330.0 · updates off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, runnerBrief(tt.in)) })
	}
}
