package engine

import "testing"

// TestFit fits the calibration on exact samples, on samples too alike to
// tell a slope, and on a model that counts fewer tokens than chars/4.
func TestFit(t *testing.T) {
	turns := func(f func(base int) int, bases ...int) []Turn {
		var out []Turn
		for _, b := range bases {
			out = append(out, Turn{BaseTokens: b, Measured: f(b)})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		turns    []Turn
		ratio    float64
		overhead int
	}{
		{"none", nil, 1, 0},
		{"linear", turns(func(b int) int { return 2000 + b*12/10 }, 1000, 2000, 4000, 8000), 1.2, 2000},
		{"one sample", turns(func(b int) int { return b + 900 }, 5000), 1, 900},
		{"fewer tokens", turns(func(b int) int { return b / 2 }, 1000, 1000, 1000), 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fit(tc.turns)
			if d := c.Ratio - tc.ratio; d > 0.01 || d < -0.01 || c.Overhead < tc.overhead-2 || c.Overhead > tc.overhead+2 {
				t.Fatalf("fit %+v, want ratio %.2f overhead %d", c, tc.ratio, tc.overhead)
			}
		})
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
