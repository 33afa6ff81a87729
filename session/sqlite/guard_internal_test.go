package sqlite

import (
	"strings"
	"testing"
)

func TestCheckProjection(t *testing.T) {
	const (
		tr   = `{"type":"message","id":"a1","parentId":"p","timestamp":"2026-01-01T00:00:00Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[{"type":"text","text":"long output"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"details":{"aggregated":"x","exitCode":0},"isError":false}}`
		as   = `{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"type":"text","text":"answer"},{"type":"toolCall","id":"c2","name":"exec","arguments":{"command":"ls","n":1}}]}}`
		user = `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"hello"},{"type":"image","data":"BBBB","mimeType":"image/png"}]}}`
		bash = `{"type":"message","id":"b1","parentId":"a2","timestamp":"2026-01-01T00:00:00Z","message":{"role":"bashExecution","command":"ls","output":"files","exitCode":0}}`
	)
	r := strings.NewReplacer
	for _, tt := range []struct {
		name, old, new string
		refuse         string // substring of the refusal; "" means accepted
	}{
		{"ToolResultText", tr, r(`"long output"`, `"[[extracted-a1]]"`).Replace(tr), ""},
		{"ToolResultDetails", tr, r(`"aggregated":"x"`, `"aggregated":"[[extracted-a1]]"`).Replace(tr), ""},
		{"ToolResultImageToText", tr, r(`{"type":"image","data":"AAAA","mimeType":"image/png"}`, `{"type":"text","text":"[[extracted-a1]]"}`).Replace(tr), ""},
		{"ToolResultStringContent", r(`[{"type":"text","text":"long output"},{"type":"image","data":"AAAA","mimeType":"image/png"}]`, `"long output"`).Replace(tr), r(`[{"type":"text","text":"long output"},{"type":"image","data":"AAAA","mimeType":"image/png"}]`, `"[[extracted-a1]]"`).Replace(tr), ""},
		{"Bookkeeping", tr, r(`"id":"a1",`, `"id":"a1","_restored":"2026-01-02T00:00:00Z","_extractable":true,`).Replace(tr), ""},
		{"Redacted", tr, r(`{"type":"text","text":"long output"}`, `{"type":"text","text":"stub","_redacted":true}`).Replace(tr), ""},
		{"Thinking", as, r(`"hmm"`, `"[[extracted-a2]]"`, `"sig"`, `""`).Replace(as), ""},
		{"ToolCallArguments", as, r(`"command":"ls"`, `"command":"purge_control restore x"`).Replace(as), ""},
		{"BashOutput", bash, r(`"files"`, `"[[extracted-b1]]"`).Replace(bash), ""},
		{"UserImageToText", user, r(`{"type":"image","data":"BBBB","mimeType":"image/png"}`, `{"type":"text","text":"[[extracted-u1]]"}`).Replace(user), ""},
		{"ImageToTextWithoutPlaceholder", tr, r(`{"type":"image","data":"AAAA","mimeType":"image/png"}`, `{"type":"text","text":"gone"}`).Replace(tr), "without a [[extracted-"},

		{"UserText", user, r(`"hello"`, `"[[extracted-u1]]"`).Replace(user), "/message/content/0/text: string changed"},
		{"AssistantText", as, r(`"answer"`, `"[[extracted-a2]]"`).Replace(as), "/message/content/1/text"},
		{"ToolCallID", tr, r(`"toolCallId":"c1"`, `"toolCallId":"c9"`).Replace(tr), "/message/toolCallId"},
		{"ToolName", tr, r(`"toolName":"exec"`, `"toolName":"read"`).Replace(tr), "/message/toolName"},
		{"IsError", tr, r(`"isError":false`, `"isError":true`).Replace(tr), "/message/isError"},
		{"EnvelopeID", tr, r(`"id":"a1"`, `"id":"a9"`).Replace(tr), "/id"},
		{"ParentID", tr, r(`"parentId":"p"`, `"parentId":"q"`).Replace(tr), "/parentId"},
		{"Timestamp", tr, r(`2026-01-01`, `2026-01-02`).Replace(tr), "/timestamp"},
		{"ExcludeFromContext", tr, r(`"id":"a1",`, `"id":"a1","excludeFromContext":true,`).Replace(tr), "member"},
		{"AppendMode", as, r(`"id":"a2",`, `"id":"a2","appendMode":"side",`).Replace(as), "member"},
		{"ToolCallName", as, r(`"name":"exec"`, `"name":"bash"`).Replace(as), "/message/content/2/name"},
		{"ToolCallNumberArgument", as, r(`"n":1`, `"n":2`).Replace(as), "/message/content/2/arguments/n"},
		{"BlockRemoved", tr, r(`,{"type":"image","data":"AAAA","mimeType":"image/png"}`, ``).Replace(tr), "block count"},
		{"StringToNumber", tr, r(`"aggregated":"x"`, `"aggregated":1`).Replace(tr), "/message/details/aggregated"},
		{"BlockType", as, r(`{"type":"thinking"`, `{"type":"text"`).Replace(as), "block type"},
		{"NotJSON", tr, tr[:len(tr)-1], "not a single JSON value"},
		{"Glued", tr, tr + tr, "not a single JSON value"},
		// Lone UTF-16 surrogate escapes (JSON.stringify of a string cut
		// inside an emoji) and invalid UTF-8 are kept and compared by
		// their bytes.
		{"LoneSurrogateToolResult", r(`"long output"`, `"long \ud83dx output"`).Replace(tr), r(`"long output"`, `"[[extracted-a1]]"`).Replace(tr), ""},
		{"LoneSurrogateUserTextKept", r(`"hello"`, `"hello \ud83dx"`).Replace(user), r(`"hello"`, `"hello \ud83dx"`, `{"type":"image","data":"BBBB","mimeType":"image/png"}`, `{"type":"text","text":"[[extracted-u1]]"}`).Replace(user), ""},
		{"LoneSurrogateUserTextChanged", r(`"hello"`, `"hello \ud83dx"`).Replace(user), r(`"hello"`, `"hello \ud83ex"`).Replace(user), "/message/content/0/text: string changed"},
		{"LoneLowSurrogateChanged", r(`"hello"`, `"\udc00"`).Replace(user), r(`"hello"`, `"\udc01"`).Replace(user), "string changed"},
		{"LoneSurrogateDecodedChanged", r(`"hello"`, `"\ud83dx"`).Replace(user), r(`"hello"`, `"\ufffdx"`).Replace(user), "string changed"},
		{"InvalidUTF8Changed", r(`"hello"`, "\"a\xffb\"").Replace(user), r(`"hello"`, "\"a\xfeb\"").Replace(user), "string changed"},
		{"LoneSurrogateNameChanged", r(`"id":"a1",`, `"id":"a1","x\ud83d":1,`).Replace(tr), r(`"id":"a1",`, `"id":"a1","x\ud83e":1,`).Replace(tr), "renamed"},
		{"CompactionSummary", `{"type":"compaction","id":"c","summary":"s","firstKeptEntryId":"a1"}`, `{"type":"compaction","id":"c","summary":"t","firstKeptEntryId":"a1"}`, "/summary"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.old == tt.new {
				t.Fatal("test edit changes nothing")
			}
			err := checkProjection([]byte(tt.old), []byte(tt.new))
			if tt.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.refuse) {
				t.Fatalf("got %v, want a refusal saying %q", err, tt.refuse)
			}
		})
	}
}
