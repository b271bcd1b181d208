package simulate

import (
	"math/rand/v2"
	"slices"
	"time"
)

// dayWeights is how a working day spreads its jobs over its 24 hours: a
// quiet night, a morning that wakes, ten working hours, an evening's
// trickle. The working hours' jobs come half in a burst at the hour (the
// pushes after a meeting, a cron at :00) and half at random in it.
var dayWeights = [24]float64{
	0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, // 00–07: night
	0.5,                          // 07: waking
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, // 08–18: working hours, bursts at the hour
	1, 1, 1, 1, // 18–22: evening
	0.3, 0.3, // 22–24
}

// working is whether hour h of dayWeights bursts at its start.
func working(h int) bool { return h >= 8 && h < 18 }

// dayArrivals spreads n arrivals over a day compressed into day (each
// hour day/24), as dayWeights says, sorted. The same rng gives the same
// day.
func dayArrivals(rng *rand.Rand, n int, day time.Duration) []time.Duration {
	var sum float64
	for _, w := range dayWeights {
		sum += w
	}
	hour := day / 24
	out := make([]time.Duration, 0, n)
	carry := 0.0
	for h, w := range dayWeights {
		want := float64(n)*w/sum + carry
		k := int(want)
		carry = want - float64(k)
		if h == len(dayWeights)-1 {
			k = n - len(out) // what rounding left
		}
		start := time.Duration(h) * hour
		burst := 0
		if working(h) {
			burst = k / 2
		}
		for i := range k {
			at := start
			if i >= burst {
				at += time.Duration(rng.Int64N(int64(hour)))
			}
			out = append(out, at)
		}
	}
	slices.Sort(out)
	return out
}
