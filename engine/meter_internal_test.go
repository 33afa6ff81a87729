package engine

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tt := range []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one, median", ms(7), 50, 7 * time.Millisecond},
		{"one, p99", ms(7), 99, 7 * time.Millisecond},
		{"two, median is the lower", ms(1, 9), 50, time.Millisecond},
		{"two, p99 is the higher", ms(1, 9), 99, 9 * time.Millisecond},
		{"three, median", ms(1, 2, 30), 50, 2 * time.Millisecond},
		{"four, median", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"hundred, median", ms(hundred...), 50, 50 * time.Millisecond},
		{"hundred, p99", ms(hundred...), 99, 99 * time.Millisecond},
		{"hundred, p100", ms(hundred...), 100, 100 * time.Millisecond},
		{"hundred and one, p99", ms(append(hundred, 500)...), 99, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("quantile(%v, %d) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}
