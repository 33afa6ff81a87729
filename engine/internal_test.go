package engine

import "testing"

// TestFit fits the latest fitSamples measured turns only, skipping the
// turns not measured.
func TestFit(t *testing.T) {
	var turns []Turn
	for i := range 30 {
		b := 1000 * (i + 1)
		m := b + 500 // the latest turns: overhead 500
		if i < 10 {
			m = 3 * b // older turns that would pull the fit away
		}
		turns = append(turns, Turn{BaseTokens: b, Measured: m}, Turn{BaseTokens: b})
	}
	c := fit(turns)
	if c.Samples != fitSamples || c.Ratio < 0.99 || c.Ratio > 1.01 || c.Overhead < 498 || c.Overhead > 502 {
		t.Fatalf("fit = %+v, want the latest %d turns: ratio 1, overhead 500", c, fitSamples)
	}
}

// TestMatch joins host messages to stored ones in order.
func TestMatch(t *testing.T) {
	st := []stored{
		{role: "user", ts: 1}, {role: "assistant", ts: 2, calls: []string{"a"}}, {role: "toolResult", ts: 3, callID: "a"},
		{role: "assistant", ts: 4}, {role: "user", ts: 5}, {role: "user", ts: 5},
	}
	host := []Message{
		{Role: "user", Timestamp: 1}, {Role: "assistant", Timestamp: 2, ToolCallIDs: []string{"b"}},
		{Role: "toolResult", Timestamp: 3, ToolCallID: "a"}, {Role: "user", Timestamp: 9},
		{Role: "user", Timestamp: 5}, {Role: "user", Timestamp: 5},
	}
	index, matched := match(host, st)
	want := []int{0, -1, 2, -1, 4, 5}
	if matched != 4 {
		t.Errorf("matched %d, want 4", matched)
	}
	for k := range want {
		if index[k] != want[k] {
			t.Fatalf("index %v, want %v", index, want)
		}
	}
}

// TestFirstKeptIndex maps a plan's first kept message to the host's
// messages: just after the last host message the summary covers.
func TestFirstKeptIndex(t *testing.T) {
	msgs := []viewMsg{{Index: 0}, {Index: -1}, {Index: 1}, {Index: 3}, {Index: 4}}
	for _, tc := range []struct{ plan, want int }{{0, 0}, {1, 1}, {2, 1}, {3, 2}, {4, 4}, {5, 5}, {9, 5}} {
		if got := firstKeptIndex(msgs, tc.plan); got != tc.want {
			t.Errorf("firstKeptIndex(%d) = %d, want %d", tc.plan, got, tc.want)
		}
	}
}

// TestPrefixChanged tells when a view breaks the cached prefix.
func TestPrefixChanged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, cur  Turn
		touched    bool
		wantChange bool
	}{
		{"same", Turn{SummaryID: "sum-a", FirstKeptEntry: "x", Replaced: 2}, Turn{SummaryID: "sum-a", FirstKeptEntry: "x", Replaced: 3}, false, false},
		{"new summary", Turn{SummaryID: "sum-a"}, Turn{SummaryID: "sum-b"}, false, true},
		{"new first kept", Turn{SummaryID: "sum-a", FirstKeptEntry: "x"}, Turn{SummaryID: "sum-a", FirstKeptEntry: "y"}, false, true},
		{"old message collapsed", Turn{}, Turn{Replaced: 1}, true, true},
		{"to a passthrough", Turn{Replaced: 1}, Turn{Passthrough: "why"}, false, true},
		{"passthrough, unaltered", Turn{Passthrough: "why"}, Turn{}, false, false},
		{"both passthrough", Turn{Passthrough: "a"}, Turn{Passthrough: "b"}, false, false},
	} {
		if got := prefixChanged(&tc.prev, &tc.cur, tc.touched); got != tc.wantChange {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.wantChange)
		}
	}
}
