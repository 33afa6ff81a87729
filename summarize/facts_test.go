package summarize

import (
	"slices"
	"strings"
	"testing"
)

func TestFactsToolClasses(t *testing.T) {
	asst := func(calls string) []byte {
		return []byte(`{"type":"message","message":{"role":"assistant","content":[` + calls + `]}}`)
	}
	lines := [][]byte{
		asst(`{"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.go","offset":1}}`),
		asst(`{"type":"toolCall","id":"2","name":"Edit","arguments":{"file_path":"b.go","old_string":"x","new_string":"y"}}`),
		asst(`{"type":"toolCall","id":"3","name":"str_replace_based_edit_tool","arguments":{"command":"view","path":"c.go"}}`),
		asst(`{"type":"toolCall","id":"4","name":"str_replace_based_edit_tool","arguments":{"command":"create","path":"d.go","file_text":"x"}}`),
		asst(`{"type":"toolCall","id":"5","name":"write","arguments":"{\"path\":\"e.go\",\"content\":\"x\"}"}`),
		asst(`{"type":"toolCall","id":"6","name":"read","arguments":{"path":"b.go"}}`),
		asst(`{"type":"toolCall","id":"7","name":"exec","arguments":{"command":"make test","workdir":"/w"}}`),
		[]byte(`{"type":"message","message":{"role":"toolResult","toolCallId":"7","toolName":"exec","content":[{"type":"text","text":"\n\nmake: *** [test] Error 2\n"}],"details":{"exitCode":2},"isError":false}}`),
		asst(`{"type":"toolCall","id":"8","name":"process","arguments":{"action":"poll","sessionId":"s"}}`),
		asst(`{"type":"toolCall","id":"9","name":"web_fetch","arguments":{"url":"https://example.net/doc"}}`),
		[]byte(`{"type":"message","message":{"role":"user","content":"[OpenClaw heartbeat poll]"}}`),
	}
	f := ExtractFacts(lines)
	if want := []string{"b.go", "d.go", "e.go"}; !slices.Equal(f.FilesModified, want) {
		t.Errorf("modified = %v, want %v", f.FilesModified, want)
	}
	if want := []string{"a.go", "c.go"}; !slices.Equal(f.FilesRead, want) {
		t.Errorf("read = %v, want %v", f.FilesRead, want)
	}
	if len(f.Commands) != 1 || f.Commands[0].Command != "make test" || !f.Commands[0].Failed || f.Commands[0].Tool != "exec" {
		t.Errorf("commands = %+v", f.Commands)
	}
	if len(f.Errors) != 1 || f.Errors[0].Text != "exit code 2: make: *** [test] Error 2" || f.Errors[0].Source != "exec" {
		t.Errorf("errors = %+v", f.Errors)
	}
	if len(f.UserRequests) != 0 {
		t.Errorf("heartbeat taken as a request: %+v", f.UserRequests)
	}
	if f.ToolCalls != 9 || f.ToolOperations[0].Tool != "read" || f.ToolOperations[0].Calls != 2 {
		t.Errorf("tool ops = %+v (calls %d)", f.ToolOperations, f.ToolCalls)
	}
	var pending []string
	for _, n := range f.NextSteps {
		pending = append(pending, n.Text)
	}
	if !slices.Contains(pending, "Tool call without a result: web_fetch(https://example.net/doc)") || slices.Contains(pending, "Tool call without a result: exec(make test)") {
		t.Errorf("next steps = %q", pending)
	}
	if !slices.ContainsFunc(f.Entities, func(e Entity) bool { return e.Name == "https://example.net/doc" && e.Kind == "url" }) {
		t.Errorf("entities = %+v", f.Entities)
	}
}

func TestCleanUserText(t *testing.T) {
	for in, want := range map[string]string{
		"Sender (untrusted metadata):\n```json\n{\"a\":1}\n```\n[Sun 2026-03-08 22:03 GMT+9] fix it": "fix it",
		"[OpenClaw heartbeat poll]": "",
		"[x] not a time stamp":      "[x] not a time stamp",
		"  plain  ":                 "plain",
	} {
		if got := cleanUserText(in); got != want {
			t.Errorf("cleanUserText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\n\tb   c", 10); got != "a b c" {
		t.Errorf("got %q", got)
	}
	if got := oneLine(strings.Repeat("é", 20), 10); got != strings.Repeat("é", 9)+"…" {
		t.Errorf("got %q", got)
	}
}
