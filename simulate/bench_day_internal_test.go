package simulate

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A compressed day holds every arrival, in order, within the day; its
// working hours burst at the hour and its night is quiet.
func TestDayArrivals(t *testing.T) {
	const n = 200
	day := 24 * time.Minute // an hour a minute
	at := dayArrivals(rand.New(rand.NewPCG(1, 2)), n, day)
	require.Len(t, at, n)
	assert.True(t, slices.IsSorted(at))
	assert.GreaterOrEqual(t, at[0], time.Duration(0))
	assert.Less(t, at[n-1], day)

	perHour := make([]int, 24)
	atTheHour := make([]int, 24)
	for _, a := range at {
		h := int(a / time.Minute)
		perHour[h]++
		if a%time.Minute == 0 {
			atTheHour[h]++
		}
	}
	night := perHour[0] + perHour[1] + perHour[2] + perHour[3] + perHour[4] + perHour[5] + perHour[6]
	assert.Less(t, night, perHour[10], "seven night hours hold fewer jobs than one working hour")
	for h := 8; h < 18; h++ {
		assert.GreaterOrEqual(t, atTheHour[h], perHour[h]/2, "hour %d: half its jobs at once at the hour", h)
	}
	assert.Zero(t, atTheHour[20], "the evening does not burst")

	again := dayArrivals(rand.New(rand.NewPCG(1, 2)), n, day)
	assert.Equal(t, at, again, "the same seed, the same day")
	assert.Len(t, dayArrivals(rand.New(rand.NewPCG(1, 2)), 7, day), 7, "rounding keeps every job")
}
