package compact

import (
	"slices"
	"testing"
)

func TestValidCuts(t *testing.T) {
	user := func(id string) msg { return msg{id: id, typ: "message", role: "user"} }
	asst := func(id string, calls ...string) msg {
		m := msg{id: id, typ: "message", role: "assistant"}
		for _, c := range calls {
			m.calls = append(m.calls, toolCall{id: c})
		}
		return m
	}
	result := func(id, call string) msg {
		return msg{id: id, typ: "message", role: "toolResult", toolResult: true, callID: call}
	}
	custom := func(id string) msg { return msg{id: id, typ: "custom_message"} }
	msgs := []msg{
		user("u1"),                 // 0
		asst("a1", "c1", "c2"),     // 1
		result("r1", "c1"),         // 2
		custom("x1"),               // 3: between a call and its result
		result("r2", "c2"),         // 4
		asst("a2"),                 // 5
		{typ: "message", role: ""}, // 6: no id
		user("u2"),                 // 7
		asst("a3", "c9"),           // 8: a call whose result never came
		user("u3"),                 // 9
	}
	got := validCuts(msgs)
	want := []bool{true, true, false, false, false, true, false, true, true, true}
	if !slices.Equal(got, want) {
		t.Errorf("validCuts = %v\nwant        %v", got, want)
	}
	for i := range msgs {
		msgs[i].tokens = 10
	}
	for _, tt := range []struct{ keep, want int }{
		{5, 9}, {10, 9}, {11, 8}, {35, 7}, {45, 5}, {60, 5}, {75, 5}, {90, 1}, {100, 1}, {101, -1}, {1000, -1},
	} {
		if c := keepCut(msgs, got, tt.keep); c != tt.want {
			t.Errorf("keepCut(keep %d) = %d, want %d", tt.keep, c, tt.want)
		}
	}
	if c := lastCut(got); c != 9 {
		t.Errorf("lastCut = %d, want 9", c)
	}
	if c := lastCut([]bool{true, false}); c != -1 {
		t.Errorf("lastCut with only the first = %d, want -1", c)
	}
}
