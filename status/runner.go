package status

import (
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Runner is the installed runner and its update (runnerpkg.Stage, the
// proof on one attempt), with the dates GitHub gives for its version
// (GET /{scope}/actions/runners/deprecations/{version}).
type Runner struct {
	// Version is the runner policies without a runner directory launch
	// ("" when none is installed).
	Version string `json:"version"`
	// AutoUpdate: the daemon installs newer releases ([runner] auto_update).
	AutoUpdate bool `json:"auto_update"`
	// Latest is the newest release as last seen ("" before a look).
	Latest string `json:"latest,omitempty"`
	// Trial is a newer runner installed and not yet proven; TrialAttempt
	// the attempt proving it, if one has claimed it.
	Trial        string       `json:"trial,omitempty"`
	TrialAttempt rm.AttemptID `json:"trial_attempt,omitzero"`
	// Bad is the last update that failed (download, checksum, or proof),
	// not tried again before RetryAt unless a newer release comes.
	Bad *RunnerUpdateFailure `json:"bad,omitempty"`
	// RuntimeEnds is when GitHub stops giving Version's runners jobs and
	// RegistrationEnds when it stops registering them; nil: none known.
	RuntimeEnds      *time.Time `json:"runtime_deprecates_at,omitempty"`
	RegistrationEnds *time.Time `json:"registration_deprecates_at,omitempty"`
	// DaysLeft is whole days from At to the earlier of them (negative once
	// past); nil when neither is known.
	DaysLeft *int `json:"days_left,omitempty"`
	// ScheduleFrom says where the dates came from: "github" (the
	// deprecations route) or "" when unknown.
	ScheduleFrom string `json:"schedule_from,omitempty"`
}

// RunnerUpdateFailure is an update of the runner that failed.
type RunnerUpdateFailure struct {
	Version string    `json:"version"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	RetryAt time.Time `json:"retry_at"`
}

// Summary is the runner in one line, as status and the TUI show it:
// version, days left before GitHub refuses it, whether updates are on,
// the update on trial or the one that failed and why.
func (r *Runner) Summary(loc *time.Location) string {
	if r == nil {
		return ""
	}
	if loc == nil {
		loc = time.Local
	}
	v := r.Version
	if v == "" {
		v = "none installed"
	}
	parts := []string{v}
	if r.DaysLeft != nil {
		switch d := *r.DaysLeft; {
		case d < 0:
			parts[0] += " (refused by GitHub since " + r.deadline().In(loc).Format(time.DateOnly) + ")"
		case d == 1:
			parts[0] += " (1 day left before GitHub refuses it)"
		default:
			parts[0] += fmt.Sprintf(" (%d days left before GitHub refuses it)", d)
		}
	}
	if r.AutoUpdate {
		parts = append(parts, "updates on")
	} else {
		parts = append(parts, "updates off")
	}
	if r.Latest != "" && r.Latest != r.Version && r.Trial == "" && (r.Bad == nil || r.Bad.Version != r.Latest) {
		parts = append(parts, "latest "+r.Latest)
	}
	if r.Trial != "" {
		t := r.Trial + " on trial"
		if !r.TrialAttempt.IsZero() {
			t += " (attempt " + r.TrialAttempt.String() + ")"
		}
		parts = append(parts, t)
	}
	if b := r.Bad; b != nil {
		parts = append(parts, "update to "+b.Version+" failed at "+b.At.In(loc).Format("15:04")+": "+b.Reason+"; retried at "+b.RetryAt.In(loc).Format("15:04")+" or with a newer release")
	}
	return strings.Join(parts, " · ")
}

// deadline is the earlier of the runtime and registration ends.
func (r *Runner) deadline() time.Time {
	var end time.Time
	for _, t := range []*time.Time{r.RuntimeEnds, r.RegistrationEnds} {
		if t != nil && (end.IsZero() || t.Before(end)) {
			end = *t
		}
	}
	return end
}
