package engine_test

import (
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestMeter proves what a Meter counts: each outcome, the time of the last
// view, the count and the longest duration since it was made, and the
// quantiles of the latest engine.LatencyWindow durations.
func TestMeter(t *testing.T) {
	at := time.Date(2026, 9, 7, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		record func(m *engine.Meter)
		want   engine.Stats
	}{
		{"nothing", func(*engine.Meter) {}, engine.Stats{}},
		{"one view", func(m *engine.Meter) { m.Record(engine.OutcomeView, 1500*time.Microsecond) },
			engine.Stats{Views: 1, LastViewAt: &at, LatencyMS: engine.Latency{Count: 1, P50: 1.5, P99: 1.5, Max: 1.5}}},
		{"each outcome", func(m *engine.Meter) {
			m.Record(engine.OutcomePassthrough, 2*time.Millisecond)
			m.Record(engine.OutcomeFailure, 40*time.Millisecond)
			m.Record(engine.OutcomeView, 3*time.Millisecond)
			m.Record(engine.OutcomeFailure, -time.Second)
		}, engine.Stats{Views: 1, Passthroughs: 1, Failures: 2, LastViewAt: &at, LatencyMS: engine.Latency{Count: 4, P50: 2, P99: 40, Max: 40}}},
		{"no view", func(m *engine.Meter) { m.Record(engine.OutcomePassthrough, time.Millisecond) },
			engine.Stats{Passthroughs: 1, LatencyMS: engine.Latency{Count: 1, P50: 1, P99: 1, Max: 1}}},
		{"the quantiles of the latest window, the max of all", func(m *engine.Meter) {
			for range engine.LatencyWindow {
				m.Record(engine.OutcomeView, 2*time.Second)
			}
			for i := range engine.LatencyWindow { // 1024 calls of 1 to 1024 ms, in another order
				m.Record(engine.OutcomeView, time.Duration((i*7)%engine.LatencyWindow+1)*time.Millisecond)
			}
		}, engine.Stats{Views: 2 * engine.LatencyWindow, LastViewAt: &at,
			LatencyMS: engine.Latency{Count: 2 * engine.LatencyWindow, P50: 512, P99: 1014, Max: 2000}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &engine.Meter{Now: func() time.Time { return at }}
			tt.record(m)
			got := m.Stats()
			if got.Views != tt.want.Views || got.Passthroughs != tt.want.Passthroughs || got.Failures != tt.want.Failures ||
				got.LatencyMS != tt.want.LatencyMS || (got.LastViewAt == nil) != (tt.want.LastViewAt == nil) ||
				(got.LastViewAt != nil && !got.LastViewAt.Equal(*tt.want.LastViewAt)) {
				t.Errorf("stats %+v (last view %v), want %+v (last view %v)", got, got.LastViewAt, tt.want, tt.want.LastViewAt)
			}
		})
	}
}

// TestMeterConcurrent records and reads from many goroutines (run with
// -race): every call is counted.
func TestMeterConcurrent(t *testing.T) {
	var m engine.Meter
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				m.Record(engine.Outcome(i%3), time.Duration(g*i)*time.Microsecond)
				if i%50 == 0 {
					_ = m.Stats()
				}
			}
		})
	}
	wg.Wait()
	st := m.Stats()
	if st.LatencyMS.Count != 4000 || st.Views+st.Passthroughs+st.Failures != 4000 {
		t.Errorf("stats %+v; want 4000 calls", st)
	}
}
