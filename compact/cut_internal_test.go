package compact

import (
	"context"
	"slices"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
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

// TestKeepRestored checks that an automatic summarize cut is pulled back
// to keep every entry restored within the window, by the log or by its own
// "_restored", and is left alone otherwise.
func TestKeepRestored(t *testing.T) {
	user := func(id string) msg {
		return msg{id: id, typ: "message", role: "user", raw: []byte(`{"id":"` + id + `"}`)}
	}
	asst := func(id, call string) msg {
		return msg{id: id, typ: "message", role: "assistant", calls: []toolCall{{id: call}}, raw: []byte(`{"id":"` + id + `"}`)}
	}
	result := func(id, call, extra string) msg {
		return msg{id: id, typ: "message", role: "toolResult", toolResult: true, callID: call,
			raw: []byte(`{"type":"message","id":"` + id + `","message":{"role":"toolResult","toolCallId":"` + call + `"}` + extra + `}`)}
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stamp := func(ago time.Duration) string { return `,"_restored":"` + now.Add(-ago).Format(time.RFC3339Nano) + `"` }
	build := func(extra string) []msg {
		return []msg{
			user("u1"), asst("a1", "c1"), result("r1", "c1", ""), // 0-2
			user("u2"), asst("a2", "c2"), result("r2", "c2", extra), // 3-5
			user("u3"), asst("a3", "c3"), result("r3", "c3", ""), // 6-8
			user("u4"), // 9
		}
	}
	keep := 10 * time.Minute
	for _, tt := range []struct {
		name   string
		extra  string
		logged map[string]time.Time
		cut    int
		want   int
	}{
		{"nothing restored", "", nil, 9, 9},
		{"r2 logged 5 minutes ago", "", map[string]time.Time{"r2": now.Add(-5 * time.Minute)}, 9, 4}, // its call a2 starts the kept part
		{"r2 logged by its source key", "", map[string]time.Time{"tc-c2": now.Add(-5 * time.Minute)}, 9, 4},
		{"r2 logged 15 minutes ago", "", map[string]time.Time{"r2": now.Add(-15 * time.Minute)}, 9, 9},
		{"r2 restored in the file", stamp(time.Minute), nil, 9, 4},
		{"r2 already kept", "", map[string]time.Time{"r2": now}, 3, 3},
		{"r1 restored", "", map[string]time.Time{"r1": now}, 9, 1},
		{"u1 restored: no cut left", "", map[string]time.Time{"u1": now}, 9, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msgs := build(tt.extra)
			restored, err := restoredTimes(context.Background(), logOf(tt.logged), bs.SessionRef{Agent: "main", ID: "s"}, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got := keepRestored(msgs, validCuts(msgs), tt.cut, restored, now, keep); got != tt.want {
				t.Errorf("keepRestored(cut %d) = %d, want %d (restored %v)", tt.cut, got, tt.want, restored)
			}
		})
	}
}

// logOf is a restore log holding m.
type logOf map[string]time.Time

func (l logOf) RecordRestore(context.Context, bs.SessionRef, string, time.Time) error { return nil }

func (l logOf) Restores(context.Context, bs.SessionRef) (map[string]time.Time, error) { return l, nil }
