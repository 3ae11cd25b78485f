package oban

import (
	"math"
	"math/rand/v2"
	"time"
)

// clampedMax is Oban.Worker's @clamped_max: jobs allowed more attempts have their attempt
// scaled into 1..20 before the exponent, so backoff stays bounded.
const clampedMax = 20

// Backoff is Oban.Worker's default backoff (2.18): 15 s + 2^attempt s, attempt clamped for
// max_attempts > 20, plus up to 10 % upward jitter. rnd supplies the jitter in [0,1); nil means
// math/rand/v2.
func Backoff(attempt, maxAttempts int, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	a := attempt
	if maxAttempts > clampedMax {
		a = int(math.Round(float64(attempt) / float64(maxAttempts) * clampedMax))
	}
	secs := 15 + math.Pow(2, float64(min(max(a, 0), 100)))
	secs += math.Trunc(rnd() * 0.1 * secs)
	if secs >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64) // past ~292 years: saturate rather than wrap
	}
	return time.Duration(secs * float64(time.Second))
}
