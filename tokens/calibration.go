package tokens

import (
	"math"
	"slices"
)

// Calibration is the fit of the context sizes a provider recorded to a
// base count: recorded ≈ Overhead + Ratio × base. Overhead is what the
// host sends that the base count does not see (system prompt, tool
// definitions); it is never negative.
type Calibration struct {
	// Ratio is recorded tokens per base token; 0 counts as 1.
	Ratio float64 `json:"ratio"`
	// Overhead is in recorded tokens.
	Overhead int `json:"overhead"`
	// Samples is how many recorded sizes the fit used.
	Samples int `json:"samples"`
}

// Scale returns Ratio × base, rounded: the calibrated size of base
// tokens, overhead excluded.
func (c Calibration) Scale(base int) int {
	r := c.Ratio
	if r <= 0 {
		r = 1
	}
	return int(math.Round(r * float64(base)))
}

// Predict returns Overhead + Ratio × base: the calibrated size of a
// request whose content counts base tokens.
func (c Calibration) Predict(base int) int { return c.Scale(base) + c.Overhead }

// Sample is one request whose size is known two ways: Base, the base
// count of what it carried, and Recorded, the size its provider recorded.
type Sample struct {
	Base, Recorded int
}

// The bounds of a fitted ratio; a least-squares fit outside them (sizes
// too alike, a provider that reports oddly) is not used.
const (
	minRatio = 0.25
	maxRatio = 4
)

// FitSamples fits a Calibration to samples whose Base counts the whole
// request the host built, so that the overhead is what lies outside it
// (the context engine knows each view it served exactly; a Model,
// which rebuilds each request from the transcript, fits with Learn).
// Samples with a Base or Recorded of 0 or less are skipped.
//
// The fit is least squares over the samples. With one sample, sizes too
// alike to tell a slope (a spread under 2 % of the mean), or a fit whose
// ratio lies outside [0.25, 4] or whose overhead is negative, the ratio
// is 1 and the overhead the median of Recorded − Base; when that median
// is negative (a model that counts fewer tokens than the base), there is
// no overhead and the ratio is the median of Recorded / Base, bounded to
// [0.25, 4]. No samples give Ratio 1.
func FitSamples(samples []Sample) Calibration {
	var xs, ys []float64
	for _, s := range samples {
		if s.Base > 0 && s.Recorded > 0 {
			xs = append(xs, float64(s.Base))
			ys = append(ys, float64(s.Recorded))
		}
	}
	if len(xs) == 0 {
		return Calibration{Ratio: 1}
	}
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if len(xs) >= 2 && sxx > 0 && math.Sqrt(sxx/n) >= 0.02*mx {
		r := sxy / sxx
		o := my - r*mx
		if r >= minRatio && r <= maxRatio && o >= 0 {
			return Calibration{Ratio: r, Overhead: int(math.Round(o)), Samples: len(xs)}
		}
	}
	diffs := make([]float64, len(xs))
	for i := range xs {
		diffs[i] = ys[i] - xs[i]
	}
	if med := median(diffs); med >= 0 {
		return Calibration{Ratio: 1, Overhead: int(math.Round(med)), Samples: len(xs)}
	}
	ratios := make([]float64, len(xs))
	for i := range xs {
		ratios[i] = ys[i] / xs[i]
	}
	slices.Sort(ratios)
	return Calibration{Ratio: min(max(ratios[len(ratios)/2], minRatio), maxRatio), Samples: len(xs)}
}

// median returns the median of xs (the mean of the middle two when their
// number is even), sorting xs in place; xs must not be empty.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return m
}
