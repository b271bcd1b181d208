package runnermanager_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// allowed is the transition table written out independently of the code:
// the life of DESIGN.md §2, with starting able to skip idle (a runner may
// take, even finish, a job between two passes) and every live state able
// to fail.
var allowed = map[[2]rm.AttemptState]bool{
	{rm.StatePending, rm.StateRegistering}:  true,
	{rm.StatePending, rm.StateFailed}:       true,
	{rm.StateRegistering, rm.StateStarting}: true,
	{rm.StateRegistering, rm.StateFailed}:   true,
	{rm.StateStarting, rm.StateIdle}:        true,
	{rm.StateStarting, rm.StateBusy}:        true,
	{rm.StateStarting, rm.StateFinished}:    true,
	{rm.StateStarting, rm.StateFailed}:      true,
	{rm.StateIdle, rm.StateBusy}:            true,
	{rm.StateIdle, rm.StateFinished}:        true,
	{rm.StateIdle, rm.StateFailed}:          true,
	{rm.StateBusy, rm.StateFinished}:        true,
	{rm.StateBusy, rm.StateFailed}:          true,
}

func TestTransitionTable(t *testing.T) {
	for _, from := range rm.AttemptStates {
		for _, to := range rm.AttemptStates {
			want := from == to || allowed[[2]rm.AttemptState{from, to}]
			assert.Equal(t, want, from.CanMoveTo(to), "%s → %s", from, to)
		}
	}
	for _, s := range rm.AttemptStates {
		assert.False(t, s.CanMoveTo("sleeping"), "%s → an unknown state", s)
		assert.Equal(t, s == rm.StateFinished || s == rm.StateFailed, s.Ended(), s)
		assert.Equal(t, !s.Ended(), s.Live(), s)
	}
	assert.False(t, rm.AttemptState("").Live(), "no state is not live")
}

func TestParseAttemptState(t *testing.T) {
	for _, s := range rm.AttemptStates {
		got, err := rm.ParseAttemptState(string(s))
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for _, bad := range []string{"", "Busy", "done", " idle"} {
		_, err := rm.ParseAttemptState(bad)
		requireInvalid(t, err, fmt.Sprintf("state %q is not one of pending, registering", bad))
	}
}

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func newAttempt() rm.Attempt {
	return rm.Attempt{ID: rm.NewAttemptID(), Policy: rm.NewPolicyID(), State: rm.StatePending, CreatedAt: t0}
}

func TestMoveToStamps(t *testing.T) {
	a := newAttempt()
	path := []rm.AttemptState{rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy, rm.StateFinished}
	for i, s := range path {
		at := t0.Add(time.Duration(i+1) * time.Minute)
		b, err := a.MoveTo(s, at)
		require.NoError(t, err, "%s → %s", a.State, s)
		assert.Equal(t, s, b.State)
		assert.Equal(t, at, b.StateAt(s), "the time of %s", s)
		assert.Equal(t, at, b.UpdatedAt)
		for _, earlier := range path[:i] {
			assert.Equal(t, a.StateAt(earlier), b.StateAt(earlier), "the time of %s is kept", earlier)
		}
		assert.Equal(t, rm.StatePending, newAttempt().State, "MoveTo returns a copy")
		a = b
	}
	assert.Equal(t, t0, a.StateAt(rm.StatePending))
	assert.Equal(t, t0.Add(5*time.Minute), a.EndedAt)
	assert.Equal(t, a.EndedAt, a.StateAt(rm.StateFinished))
	assert.True(t, a.StateAt(rm.StateFailed).IsZero(), "a finished attempt never failed")
	assert.True(t, a.StateAt("sleeping").IsZero())

	// Staying is allowed and stamps nothing.
	same, err := a.MoveTo(rm.StateFinished, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, a, same)
}

func TestMoveToRefused(t *testing.T) {
	tests := []struct{ from, to rm.AttemptState }{
		{rm.StatePending, rm.StateBusy},
		{rm.StatePending, rm.StateFinished},
		{rm.StateIdle, rm.StatePending},
		{rm.StateBusy, rm.StateIdle},
		{rm.StateFinished, rm.StateFailed},
		{rm.StateFailed, rm.StateRegistering},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%s", tt.from, tt.to), func(t *testing.T) {
			a := newAttempt()
			a.State = tt.from
			b, err := a.MoveTo(tt.to, t0.Add(time.Hour))
			requireInvalid(t, err, fmt.Sprintf("cannot move from %s to %s", tt.from, tt.to))
			assert.Equal(t, a, b, "a refused move changes nothing")
		})
	}
}

func TestConclude(t *testing.T) {
	end := t0.Add(time.Hour)
	tests := []struct {
		name      string
		from      rm.AttemptState
		outcome   rm.Outcome
		wantState rm.AttemptState
		wantErr   string
	}{
		{"Completed", rm.StateBusy, rm.Outcome{Kind: rm.CompletedJob}, rm.StateFinished, ""},
		{"IdleExit", rm.StateIdle, rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "scaled down"}, rm.StateFinished, ""},
		{"StartedAndDone", rm.StateStarting, rm.Outcome{Kind: rm.CompletedJob}, rm.StateFinished, ""},
		{"RegistrationFailed", rm.StatePending, rm.FailedWith(rm.RegistrationFailed, "401"), rm.StateFailed, ""},
		{"Lost", rm.StateBusy, rm.FailedWith(rm.Lost, ""), rm.StateFailed, ""},
		{"PendingCannotComplete", rm.StatePending, rm.Outcome{Kind: rm.CompletedJob}, "", "cannot move from pending to finished"},
		{"FailedWithoutReason", rm.StateBusy, rm.Outcome{Kind: rm.Failed}, "", "failed without a failure reason"},
		{"UnknownKind", rm.StateBusy, rm.Outcome{Kind: "vanished"}, "", `finished with outcome "vanished"`},
		{"Twice", rm.StateFinished, rm.Outcome{Kind: rm.CompletedJob}, rm.StateFinished, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAttempt()
			a.State = tt.from
			if tt.from.Ended() {
				a.Outcome, a.EndedAt = tt.outcome, t0
			}
			b, err := a.Conclude(tt.outcome, end)
			if tt.wantErr != "" {
				requireInvalid(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantState, b.State)
			assert.Equal(t, tt.outcome, b.Outcome)
			assert.False(t, b.Live())
			if !tt.from.Ended() {
				assert.Equal(t, end, b.EndedAt)
			}
			require.NoError(t, b.Validate())
		})
	}
}

func TestAttemptValidate(t *testing.T) {
	tests := map[string]struct {
		edit func(a *rm.Attempt)
		want string // "" means valid
	}{
		"Pending":           {func(a *rm.Attempt) {}, ""},
		"Busy":              {func(a *rm.Attempt) { a.State = rm.StateBusy }, ""},
		"Finished":          {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateFinished, rm.Outcome{Kind: rm.CompletedJob} }, ""},
		"FinishedIdle":      {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateFinished, rm.Outcome{Kind: rm.ExitedIdleWithoutWork} }, ""},
		"Failed":            {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateFailed, rm.FailedWith(rm.Zombie, "") }, ""},
		"NoID":              {func(a *rm.Attempt) { a.ID = rm.AttemptID{} }, "attempt has no id"},
		"NoPolicy":          {func(a *rm.Attempt) { a.Policy = rm.PolicyID{} }, "has no policy"},
		"NoState":           {func(a *rm.Attempt) { a.State = "" }, `state "" is not one of`},
		"BadState":          {func(a *rm.Attempt) { a.State = "done" }, `state "done"`},
		"FinishedNoOutcome": {func(a *rm.Attempt) { a.State = rm.StateFinished }, `finished with outcome ""`},
		"FinishedFailure":   {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateFinished, rm.FailedWith(rm.Lost, "") }, `finished with outcome "failed"`},
		"FailedNoOutcome":   {func(a *rm.Attempt) { a.State = rm.StateFailed }, "failed without a failure reason"},
		"FailedCompleted":   {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateFailed, rm.Outcome{Kind: rm.CompletedJob} }, "failed without a failure reason"},
		"LiveWithOutcome":   {func(a *rm.Attempt) { a.State, a.Outcome = rm.StateIdle, rm.Outcome{Kind: rm.CompletedJob} }, "is idle but has outcome completed_job"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			a := newAttempt()
			tt.edit(&a)
			err := a.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			requireInvalid(t, err, tt.want)
		})
	}
}

func TestOutcomeString(t *testing.T) {
	tests := map[string]struct {
		o    rm.Outcome
		want string
	}{
		"Zero":      {rm.Outcome{}, ""},
		"Completed": {rm.Outcome{Kind: rm.CompletedJob}, "completed_job"},
		"Idle":      {rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "scaled down"}, "exited_idle: scaled down"},
		"Failed":    {rm.FailedWith(rm.StartTimeout, "no session after 5m"), "failed(start_timeout): no session after 5m"},
		"NoReason":  {rm.Outcome{Kind: rm.Failed}, "failed"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.o.String())
			assert.Equal(t, tt.o.Kind == "", tt.o.IsZero())
		})
	}
}

func TestRunnerName(t *testing.T) {
	h, a := rm.NewHostID(), rm.NewAttemptID()
	prefix := rm.RunnerNamePrefix(h)
	assert.Equal(t, "rm-"+h.String()[:8]+"-", prefix)
	name := rm.RunnerName(h, a)
	assert.True(t, strings.HasPrefix(name, prefix))
	assert.True(t, strings.HasSuffix(name, a.String()))
	assert.Len(t, name, 38)
	assert.LessOrEqual(t, len(name), 64, "GitHub's limit on runner names")
	assert.NotEqual(t, rm.RunnerNamePrefix(rm.NewHostID()), prefix, "each host has its own prefix")
}

// TestJobJSON: a job marshals as docs/json.md says (number null when not
// known) and reads back the same.
func TestJobJSON(t *testing.T) {
	for _, tc := range []struct {
		job  rm.Job
		want string
	}{
		{rm.Job{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", RunID: 9, Workflow: "ci", Name: "build"},
			`{"id":"0f8fad5b-d9cb-469f-a165-70867728950e","number":null,"run_id":9,"workflow":"ci","name":"build","queued_at":null,"assigned_at":null}`},
		{rm.Job{ID: "42", Number: 42, RunID: 9, Workflow: "ci", Name: "test",
			QueuedAt: time.Date(2026, 12, 3, 10, 0, 0, 5e6, time.UTC), AssignedAt: time.Date(2026, 12, 3, 10, 0, 1, 0, time.UTC)},
			`{"id":"42","number":42,"run_id":9,"workflow":"ci","name":"test","queued_at":"2026-12-03T10:00:00.005Z","assigned_at":"2026-12-03T10:00:01Z"}`},
	} {
		b, err := json.Marshal(tc.job)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(b))
		var back rm.Job
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, tc.job, back)
	}
	assert.Equal(t, "build", rm.Job{ID: "x", Name: "build"}.Label())
	assert.Equal(t, "x", rm.Job{ID: "x"}.Label(), "no name: its id")
}

func TestStartSplit(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name                     string
		queued, assigned, idle   time.Time
		busy                     time.Time
		ok                       bool
		assign, ready, take, all time.Duration
	}{
		{"a boot: assigned, launched, listening, taken", at(0), at(50), at(2050), at(2060), true, ms(50), ms(2000), ms(10), ms(2060)},
		{"a warm spare listened before the job came", at(0), at(40), at(-60000), at(48), true, ms(40), 0, ms(8), ms(48)},
		{"classic: no assignment told", at(0), time.Time{}, at(3000), at(3100), true, 0, ms(3000), ms(100), ms(3100)},
		{"never seen idle: listened and took at once", at(0), at(30), time.Time{}, at(1500), true, ms(30), ms(1470), 0, ms(1500)},
		{"a skewed clock never makes a part negative", at(0), at(50), at(20), at(30), true, ms(50), 0, 0, ms(50)},
		{"no queue time: nothing to split", time.Time{}, at(50), at(100), at(200), false, 0, 0, 0, 0},
		{"not taken yet", at(0), at(50), at(100), time.Time{}, false, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rm.Attempt{Job: rm.Job{ID: "j", QueuedAt: tc.queued, AssignedAt: tc.assigned}, IdleAt: tc.idle, BusyAt: tc.busy}
			s, ok := a.StartSplit()
			require.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.assign, s.Assign, "assign")
			assert.Equal(t, tc.ready, s.Ready, "ready")
			assert.Equal(t, tc.take, s.Take, "take")
			if tc.name != "a skewed clock never makes a part negative" {
				assert.Equal(t, tc.all, s.Total(), "total")
			}
			assert.Equal(t, s.Ready+s.Take, s.Startup())
		})
	}
}
