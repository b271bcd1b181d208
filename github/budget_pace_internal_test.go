package github

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// TestBudgetPace: the poll keeps its interval while half the budget is
// left, then stretches as the rest goes, to MaxBudgetPoll at the reserve,
// never past the reset.
func TestBudgetPace(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := func(remaining int, reset time.Duration) rm.Budget {
		return rm.Budget{Limit: 5000, Remaining: remaining, Reset: now.Add(reset), SeenAt: now}
	}
	d := 2 * time.Second
	for _, tc := range []struct {
		name   string
		budget rm.Budget
		want   time.Duration
	}{
		{"never seen", rm.Budget{}, d},
		{"full", b(5000, time.Hour), d},
		{"half left", b(2500, time.Hour), d},
		{"a third left", b(1500, time.Hour), 2 * time.Second * 2000 / 1000},
		{"near the reserve", b(520, time.Hour), MaxBudgetPoll},
		{"at the reserve", b(500, time.Hour), MaxBudgetPoll},
		{"spent", b(0, time.Hour), MaxBudgetPoll},
		{"reset soon", b(0, 5*time.Second), 5 * time.Second},
		{"reset passed", b(0, -time.Second), d},
		{"reset sooner than the poll", b(0, time.Second), d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, budgetPace(d, tc.budget, now))
		})
	}
	// Monotone: less left, never a shorter poll.
	prev := time.Duration(0)
	for left := 5000; left >= 0; left -= 50 {
		got := budgetPace(d, b(left, time.Hour), now)
		assert.GreaterOrEqual(t, got, prev, "remaining %d", left)
		prev = got
	}
}
