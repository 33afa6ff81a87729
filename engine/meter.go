package engine

import (
	"slices"
	"sync"
	"time"
)

// Outcome is how an assemble call was answered, as a Meter counts it.
type Outcome int

// The outcomes of an assemble call.
const (
	// OutcomeView is a call answered with a view.
	OutcomeView Outcome = iota
	// OutcomePassthrough is a call answered with the host's messages
	// unchanged (View.Passthrough says why).
	OutcomePassthrough
	// OutcomeFailure is a call answered with an error.
	OutcomeFailure
)

// LatencyWindow is how many of the latest durations a Meter keeps to
// compute its quantiles.
const LatencyWindow = 1024

// Meter counts the assemble calls of a server and how long they took, for
// its health and status answers. Its memory is bounded: the counts, the
// longest duration and a ring of the latest LatencyWindow durations, from
// which Stats computes the quantiles. The zero value is ready to use; a
// Meter is safe for concurrent use and must not be copied after first use.
type Meter struct {
	// Now returns the time of a call; nil means time.Now.
	Now func() time.Time

	mu                            sync.Mutex
	views, passthroughs, failures int64
	lastView                      time.Time
	count                         int64
	longest                       time.Duration
	// ring holds the latest durations; next is where the next one goes.
	ring [LatencyWindow]time.Duration
	next int
}

// Record counts one assemble call answered with the outcome o, which took
// d. A negative d counts as 0.
func (m *Meter) Record(o Outcome, d time.Duration) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	at := now().UTC()
	d = max(d, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o {
	case OutcomeView:
		m.views++
		m.lastView = at
	case OutcomePassthrough:
		m.passthroughs++
	default:
		m.failures++
	}
	m.count++
	m.longest = max(m.longest, d)
	m.ring[m.next] = d
	m.next = (m.next + 1) % LatencyWindow
}

// Stats are the assemble calls a Meter counted, as GET /api/health,
// GET /api/plugin/v1/health and the scheduler status answer them
// ("engine").
type Stats struct {
	// Views counts the calls answered with a view, Passthroughs those
	// answered with the host's messages unchanged, Failures those answered
	// with an error.
	Views        int64 `json:"views"`
	Passthroughs int64 `json:"passthroughs"`
	Failures     int64 `json:"failures"`
	// LastViewAt is when the last view was answered, nil before the
	// first.
	LastViewAt *time.Time `json:"last_view_at"`
	// LatencyMS is how long the calls took, in milliseconds.
	LatencyMS Latency `json:"latency_ms"`
}

// Latency is the distribution of the assemble calls' durations, in
// milliseconds to the microsecond.
type Latency struct {
	// Count counts every call measured (views, pass-throughs and
	// failures); Max is the longest of them.
	Count int64 `json:"count"`
	// P50 and P99 are the median and the 99th percentile (nearest rank)
	// of the latest LatencyWindow calls; 0 before the first.
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Stats returns what m counted since it was made.
func (m *Meter) Stats() Stats {
	m.mu.Lock()
	st := Stats{Views: m.views, Passthroughs: m.passthroughs, Failures: m.failures,
		LatencyMS: Latency{Count: m.count, Max: elapsedMS(m.longest)}}
	if !m.lastView.IsZero() {
		t := m.lastView
		st.LastViewAt = &t
	}
	n := int(min(m.count, LatencyWindow))
	ds := slices.Clone(m.ring[:n])
	m.mu.Unlock()
	slices.Sort(ds)
	st.LatencyMS.P50 = elapsedMS(quantile(ds, 50))
	st.LatencyMS.P99 = elapsedMS(quantile(ds, 99))
	return st
}

// quantile returns the p-th percentile (0 < p ≤ 100) of the sorted
// durations by the nearest-rank rule: the smallest duration that at least
// p percent of them do not exceed; 0 for none.
func quantile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ⌈p·n/100⌉, in integers
	return sorted[min(max(rank, 1), len(sorted))-1]
}
