package summarize

import (
	"reflect"
	"testing"
)

// TestReadLine reads one line of each shape the summaries know: what
// every field of the view holds for it.
func TestReadLine(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		ok         bool
		want       view
	}{
		{name: "blank", line: "  "},
		{name: "not an object", line: `[{"type":"message"}]`},
		{name: "truncated", line: `{"type":"message","message":{"role":"user","content":"a`},
		{name: "settings", line: `{"type":"model_change","id":"m1","modelId":"x"}`, ok: true, want: view{id: "m1"}},
		{
			name: "user string content",
			line: `{"type":"message","id":"u1","message":{"role":"user","content":"fix \"x.go\""}}`,
			ok:   true, want: view{role: roleUser, id: "u1", text: []string{`fix "x.go"`}},
		},
		{
			name: "user blocks",
			line: `{"type":"message","id":"u2","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":""},{"text":"b","type":"text"}]}}`,
			ok:   true, want: view{role: roleUser, id: "u2", text: []string{"a", "b"}, images: 1},
		},
		{
			name: "assistant",
			line: `{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x.go","limit":5}},{"type":"toolCall","id":"c2","name":"edit","arguments":"{\"path\":\"y.go\"}"}],"stopReason":"error","errorMessage":"boom"}}`,
			ok:   true,
			want: view{role: roleAssistant, id: "a1", text: []string{"ok"}, thinking: []string{"hm"},
				calls:      []toolCall{{id: "c1", name: "read", args: []byte(`{"path":"x.go","limit":5}`)}, {id: "c2", name: "edit", args: []byte(`{"path":"y.go"}`)}},
				stopReason: "error", errorMessage: "boom"},
		},
		{
			name: "tool result with details exit code, glued to a second value",
			line: `{"type":"message","id":"r1","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"FAIL"}],"isError":true,"details":{"exitCode":2}}}{"glued":1}`,
			ok:   true,
			want: view{role: roleToolResult, id: "r1", text: []string{"FAIL"}, callID: "c1", toolName: "bash", isError: true, exitCode: 2, hasExit: true},
		},
		{
			name: "trailing garbage after the object",
			line: `{"type":"message","id":"t1","message":{"role":"user","content":"hi"}} garbage`,
			ok:   true, want: view{role: roleUser, id: "t1", text: []string{"hi"}},
		},
		{
			name: "a closing brace too many",
			line: `{"type":"message","id":"t2","message":{"role":"user","content":"hi"}}}`,
			ok:   true, want: view{role: roleUser, id: "t2", text: []string{"hi"}},
		},
		{
			name: "leading space, a second object after a comma",
			line: ` {"type":"message","id":"t3","message":{"role":"user","content":"hi"}},{}`,
			ok:   true, want: view{role: roleUser, id: "t3", text: []string{"hi"}},
		},
		{
			name: "bash execution",
			line: `{"type":"message","id":"b1","message":{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":1,"excludeFromContext":true}}`,
			ok:   true,
			want: view{role: roleBash, id: "b1", command: "ls", output: "a\nb", exitCode: 1, hasExit: true, excluded: true},
		},
		{
			name: "custom message",
			line: `{"type":"custom_message","id":"k1","customType":"note","content":[{"type":"text","text":"c"},{"type":"image"}]}`,
			ok:   true, want: view{role: roleCustom, id: "k1", text: []string{"c"}, images: 1},
		},
		{
			name: "compaction",
			line: `{"type":"compaction","id":"p1","summary":"so far","details":{"readFiles":["a.go",7,""],"modifiedFiles":["b.go"]}}`,
			ok:   true,
			want: view{role: roleCompaction, id: "p1", summary: "so far", readFiles: []string{"a.go"}, modifiedFiles: []string{"b.go"}},
		},
		{
			name: "flat tool result",
			line: `{"__id":"e1","id":"ignored","type":"tool_result","output":"error: boom"}`,
			ok:   true, want: view{role: roleToolResult, id: "e1", text: []string{"error: boom"}},
		},
		{
			name: "flat thinking",
			line: `{"__id":"e2","type":"thinking","thinking":"hmm"}`,
			ok:   true, want: view{role: roleAssistant, id: "e2", thinking: []string{"hmm"}},
		},
		{
			name: "flat assistant by role",
			line: `{"__id":"","id":"e3","type":"x","role":"assistant","content":"hi","errorMessage":"e"}`,
			ok:   true, want: view{role: roleAssistant, id: "e3", text: []string{"hi"}, errorMessage: "e"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := readLine([]byte(tt.line))
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("readLine = %v\n%+v\nwant %v\n%+v", ok, got, tt.ok, tt.want)
			}
		})
	}
}
