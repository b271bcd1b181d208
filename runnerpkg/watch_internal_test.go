package runnerpkg

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDaysUntil(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	assert.Equal(t, 0, daysUntil(now, now))
	assert.Equal(t, 0, daysUntil(now, now.Add(day-time.Second)))
	assert.Equal(t, 1, daysUntil(now, now.Add(day)))
	assert.Equal(t, 2, daysUntil(now, now.Add(2*day+time.Hour)))
	assert.Equal(t, -1, daysUntil(now, now.Add(-time.Second)), "within the first day after")
	assert.Equal(t, -1, daysUntil(now, now.Add(-day)))
	assert.Equal(t, -2, daysUntil(now, now.Add(-day-time.Second)))
}
