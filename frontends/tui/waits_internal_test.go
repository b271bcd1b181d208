package tui

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/status"
)

func TestWaitsText(t *testing.T) {
	home := "repo:octo/app group=Default scale-set=home"
	mem := "memory: needs 6.0G, 2.1G free"
	tests := []struct {
		name     string
		policies []status.Policy
		want     string
	}{
		{"None", nil, "demand 0 · admitted 0 · waiting 0"},
		{"AllServed", []status.Policy{{Name: "a", Target: home, Demand: 3, Admitted: 4}},
			"demand 3 · admitted 4 · waiting 0"},
		{"HeldByMemory", []status.Policy{{Name: "a", Target: home, Demand: 5, Admitted: 5,
			Wait: status.Wait{Queued: 7, Waiting: 7, WaitReason: mem}}},
			"demand 12 · admitted 5 · waiting 7 (" + mem + ")"},
		{"TargetCountsOnce", []status.Policy{
			{Name: "b", Target: home, Demand: 2, Admitted: 1, Wait: status.Wait{Waiting: 1, WaitReason: "at max 2"}},
			{Name: "a", Target: home, Demand: 2, Admitted: 1, Wait: status.Wait{Waiting: 1, WaitReason: "at max 2"}},
		}, "demand 2 · admitted 2 · waiting 1 (at max 2)"},
		{"PausedLeftOut", []status.Policy{
			{Name: "a", Target: home, Demand: 1, Admitted: 1},
			{Name: "gpu", Target: "org:acme", Paused: true, Demand: 4, Wait: status.Wait{Waiting: 4, WaitReason: "paused"}},
		}, "demand 1 · admitted 1 · waiting 0"},
		{"FirstReasonByName", []status.Policy{
			{Name: "z", Target: "t1", Demand: 1, Wait: status.Wait{Waiting: 1, WaitReason: "runners starting"}},
			{Name: "a", Target: "t2", Demand: 2, Wait: status.Wait{Waiting: 2, WaitReason: mem}},
		}, "demand 3 · admitted 0 · waiting 3 (" + mem + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, waitsText(tt.policies))
		})
	}
}

func TestCountsText(t *testing.T) {
	tests := []struct {
		row  PolicyRow
		want string
	}{
		{PolicyRow{Policy: status.Policy{Live: 3, Idle: 1, Busy: 2, Max: 4}}, "3/1/2/4"},
		{PolicyRow{Policy: status.Policy{Live: 12, Busy: 11, Max: 100}}, "12/0/11/100"},
		{PolicyRow{Policy: status.Policy{Live: 12, Busy: 11, Max: 100000}}, "12/0/11/100k"},
		{PolicyRow{Policy: status.Policy{Live: 1, Max: 2500}, Pending: true}, "1/0/0/2.5k*"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, countsText(tt.row))
		assert.LessOrEqual(t, textWidth(tt.want), policyCols[4].w, tt.want)
	}
}

func TestJoinFit(t *testing.T) {
	assert.Equal(t, "a · b", joinFit(5, "a", "b"))
	assert.Equal(t, "a", joinFit(4, "a", "b"))
	assert.Equal(t, "abc…", joinFit(4, "abcdef", "b"))
}

// A part that does not fit is cut at a word's end when more than its first
// word is left, else it goes whole; never in the middle of a word.
func TestJoinFitWords(t *testing.T) {
	parts := []string{"5.0G", "demand 20", "waiting 7 (memory: needs 1.5G, 0.9G free)", "refused memory 3"}
	tests := map[int]string{
		80: "5.0G · demand 20 · waiting 7 (memory: needs 1.5G, 0.9G free) · refused memory 3",
		50: "5.0G · demand 20 · waiting 7 (memory: needs 1.5G…",
		30: "5.0G · demand 20 · waiting 7…",
		25: "5.0G · demand 20",
		18: "5.0G · demand 20",
		15: "5.0G",
		3:  "5.…",
	}
	for w, want := range tests {
		assert.Equal(t, want, joinFit(w, parts...), "width %d", w)
	}
	assert.Equal(t, "", cutWords("reserve", 5))
	assert.Equal(t, "spares held…", cutWords("spares held: the host keeps 1", 14))
}
