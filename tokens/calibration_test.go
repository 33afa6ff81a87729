package tokens_test

import (
	"math"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// TestFitSamples fits exact samples, samples too alike to tell a slope,
// one sample, a model that counts fewer tokens than the base, a ratio out
// of bounds and samples that measured nothing.
func TestFitSamples(t *testing.T) {
	samples := func(f func(base int) int, bases ...int) []tokens.Sample {
		var out []tokens.Sample
		for _, b := range bases {
			out = append(out, tokens.Sample{Base: b, Recorded: f(b)})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		samples  []tokens.Sample
		ratio    float64
		overhead int
		n        int
	}{
		{"none", nil, 1, 0, 0},
		{"linear", samples(func(b int) int { return 2000 + b*12/10 }, 1000, 2000, 4000, 8000), 1.2, 2000, 4},
		{"one sample", samples(func(b int) int { return b + 900 }, 5000), 1, 900, 1},
		{"alike", samples(func(b int) int { return b + 300 }, 10000, 10001, 10002), 1, 300, 3},
		{"fewer tokens", samples(func(b int) int { return b / 2 }, 1000, 1000, 1000), 0.5, 0, 3},
		{"far fewer tokens", samples(func(b int) int { return b / 10 }, 1000, 1000), 0.25, 0, 2},
		{"steep slope", samples(func(b int) int { return b * 6 }, 1000, 2000, 3000), 1, 10000, 3},
		{"unmeasured skipped", []tokens.Sample{{Base: 0, Recorded: 50}, {Base: 40, Recorded: 0}, {Base: 1000, Recorded: 1100}}, 1, 100, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tokens.FitSamples(tc.samples)
			if math.Abs(c.Ratio-tc.ratio) > 0.01 || c.Overhead < tc.overhead-2 || c.Overhead > tc.overhead+2 || c.Samples != tc.n {
				t.Fatalf("FitSamples = %+v, want ratio %.2f overhead %d samples %d", c, tc.ratio, tc.overhead, tc.n)
			}
		})
	}
}

// TestCalibrationPredict scales and adds the overhead; a zero ratio counts
// as 1.
func TestCalibrationPredict(t *testing.T) {
	for _, tc := range []struct {
		c            tokens.Calibration
		base         int
		scale, total int
	}{
		{tokens.Calibration{}, 1000, 1000, 1000},
		{tokens.Calibration{Ratio: 1.25, Overhead: 300}, 1000, 1250, 1550},
		{tokens.Calibration{Ratio: 0.5, Overhead: 7}, 3, 2, 9},
	} {
		if got := tc.c.Scale(tc.base); got != tc.scale {
			t.Errorf("%+v.Scale(%d) = %d, want %d", tc.c, tc.base, got, tc.scale)
		}
		if got := tc.c.Predict(tc.base); got != tc.total {
			t.Errorf("%+v.Predict(%d) = %d, want %d", tc.c, tc.base, got, tc.total)
		}
	}
}
