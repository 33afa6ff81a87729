package engine

import (
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// fitSamples is how many of the latest measured turns the calibration
// fits; measureScan how many of the latest turns are looked at for a
// measure not yet known.
const (
	fitSamples  = 20
	measureScan = 50
)

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

// fit fits the calibration (tokens.FitSamples) to the latest
// fitSamples measured turns: each turn's view counted BaseTokens, its
// provider recorded Measured.
func fit(turns []Turn) Calibration {
	var samples []tokens.Sample
	for i := len(turns) - 1; i >= 0 && len(samples) < fitSamples; i-- {
		if t := turns[i]; t.Measured > 0 && t.BaseTokens > 0 {
			samples = append(samples, tokens.Sample{Base: t.BaseTokens, Recorded: t.Measured})
		}
	}
	return tokens.FitSamples(samples)
}
