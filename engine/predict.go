package engine

import (
	"math"
	"slices"

	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// fitSamples is how many of the latest measured turns the calibration
// fits; measureScan how many of the latest turns are looked at for a
// measure not yet known.
const (
	fitSamples  = 20
	measureScan = 50
)

// The bounds of a fitted ratio; a fit outside them (too few distinct
// sizes, a provider that reports oddly) falls back to ratio 1 and the
// median overhead.
const (
	minRatio = 0.25
	maxRatio = 4
)

// predict returns the calibrated size of base tokens: Overhead + Ratio ×
// base (Ratio 1 and no overhead before any turn was measured).
func predict(base int, c Calibration) int {
	return calibrate(base, c) + c.Overhead
}

// calibrate returns Ratio × base, overhead excluded.
func calibrate(base int, c Calibration) int {
	r := c.Ratio
	if r <= 0 {
		r = 1
	}
	return int(math.Round(r * float64(base)))
}

// recordedInput returns the size of the request that produced the
// assistant message s as its provider recorded it (tokens.RecordedUsage's
// Context), or 0 when it records none or is not a model's answer to a
// completed request (Usage.Answered).
func recordedInput(s *stored) int {
	if s.role != "assistant" {
		return 0
	}
	u, ok := tokens.RecordedUsage(s.e.Raw)
	if !ok || !u.Answered() {
		return 0
	}
	return int(u.Context)
}

// measure fills the Measured size of the latest turns that do not have
// one yet, from the recorded usage of the first assistant message stored
// after each turn's LastEntry (for a turn whose view held no message, the
// first assistant message of the context), and fits st.Calibration again
// when one was found. Of several turns with the same LastEntry (views
// served with no model answer stored between them, as when the host
// retries a turn after an overflow), only the last is measured: the
// assistant message answers the request that followed it.
func (e *Engine) measure(c *viewCache, st *State) {
	sm, pos := c.sm, c.byID
	found := false
	from := max(len(st.Turns)-measureScan, 0)
	lastOf := make(map[string]int, len(st.Turns)-from) // anchor → the latest turn with it
	for i := from; i < len(st.Turns); i++ {
		lastOf[st.Turns[i].LastEntry] = i
	}
	for i := from; i < len(st.Turns); i++ {
		t := &st.Turns[i]
		if t.Measured > 0 || lastOf[t.LastEntry] != i {
			continue
		}
		start := 0
		switch {
		case t.LastEntry != "":
			k, ok := pos[t.LastEntry]
			if !ok {
				continue
			}
			start = k + 1
		case t.Messages > 0:
			continue // a passthrough that matched nothing: no anchor
		}
		for k := start; k < len(sm); k++ {
			if sm[k].role != "assistant" {
				continue
			}
			if n := c.usage(k); n > 0 {
				t.Measured = n
				found = true
			}
			break
		}
	}
	if found {
		st.Calibration = fit(st.Turns)
	}
}

// fit fits measured = Overhead + Ratio × BaseTokens by least squares over
// the latest fitSamples measured turns. With one sample, or sizes too
// alike to tell a slope, or a fit outside the ratio bounds, the ratio is
// 1 and the overhead the median of measured − base, or, when that is
// negative, no overhead and the median ratio. The overhead is never
// negative.
func fit(turns []Turn) Calibration {
	var xs, ys []float64
	for i := len(turns) - 1; i >= 0 && len(xs) < fitSamples; i-- {
		if t := turns[i]; t.Measured > 0 && t.BaseTokens > 0 {
			xs = append(xs, float64(t.BaseTokens))
			ys = append(ys, float64(t.Measured))
		}
	}
	n := float64(len(xs))
	if len(xs) == 0 {
		return Calibration{Ratio: 1}
	}
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
	slices.Sort(diffs)
	med := diffs[len(diffs)/2]
	if len(diffs)%2 == 0 {
		med = (diffs[len(diffs)/2-1] + diffs[len(diffs)/2]) / 2
	}
	if med >= 0 {
		return Calibration{Ratio: 1, Overhead: int(math.Round(med)), Samples: len(xs)}
	}
	// The model counts fewer tokens than chars/4: a ratio alone.
	ratios := make([]float64, len(xs))
	for i := range xs {
		ratios[i] = ys[i] / xs[i]
	}
	slices.Sort(ratios)
	return Calibration{Ratio: min(max(ratios[len(ratios)/2], minRatio), maxRatio), Samples: len(xs)}
}
