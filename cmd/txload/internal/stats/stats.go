// Package stats summarises latency samples: count, percentiles (nearest
// rank) and maximum.
package stats

import (
	"math"
	"sort"
	"time"
)

// Summary is the digest of a set of latency samples.
type Summary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P90   time.Duration `json:"p90"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

// Summarize sorts samples in place and returns their digest; the zero
// Summary when there are none.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return Summary{
		Count: len(samples),
		P50:   Percentile(samples, 50),
		P90:   Percentile(samples, 90),
		P99:   Percentile(samples, 99),
		Max:   samples[len(samples)-1],
	}
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are less than or equal to it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// Median returns the median of xs (the mean of the two middle values for an
// even count) without modifying xs; 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
