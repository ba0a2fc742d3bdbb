package stats

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 90: 90 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 0.1: time.Millisecond} {
		if got := Percentile(s, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("empty: %v", got)
	}
	small := []time.Duration{1, 2, 3}
	if got := Percentile(small, 50); got != 2 {
		t.Errorf("p50 of 1,2,3 = %v", got)
	}
	if got := Percentile(small, 99); got != 3 {
		t.Errorf("p99 of 1,2,3 = %v", got)
	}
}

func TestSummarizeSortsAndDigests(t *testing.T) {
	s := Summarize([]time.Duration{5, 1, 4, 2, 3})
	if s.Count != 5 || s.P50 != 3 || s.Max != 5 || s.P90 != 5 || s.P99 != 5 {
		t.Errorf("summary = %+v", s)
	}
	if (Summarize(nil) != Summary{}) {
		t.Error("empty summary not zero")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median modified its input")
			}
		}
	}
}
