package session_test

import (
	"fmt"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		name string
		line string
		want []string // "trigger pointer" pairs in document order
	}{
		{"AssistantThinkingTextToolCall",
			`{"type":"message","id":"m","message":{"role":"assistant","content":[{"type":"thinking","thinking":"T","thinkingSignature":"S"},{"type":"text","text":"A"},{"type":"toolCall","id":"t1","name":"exec","arguments":{"command":"ls","opts":{"cwd":"/"},"n":3}}],"usage":{"input":1},"model":"m"}}`,
			[]string{"thinking /message/content/0/thinking", "thinking /message/content/0/thinkingSignature", "assistant /message/content/1/text",
				"tool_call /message/content/2/arguments/command", "tool_call /message/content/2/arguments/opts/cwd"}},
		{"ToolResultWithImageAndDetails",
			`{"type":"message","id":"m","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"out"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"details":{"diff":"D","exitCode":0},"isError":false}}`,
			[]string{"tool_result /message/content/0/text", "image /message/content/1", "tool_result /message/details/diff"}},
		{"UserStringContent", `{"type":"message","id":"m","message":{"role":"user","content":"hello"}}`,
			[]string{"user /message/content"}},
		{"UserBlocks", `{"type":"message","id":"m","message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`,
			[]string{"user /message/content/0/text"}},
		{"BashExecution", `{"type":"message","id":"m","message":{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0}}`,
			[]string{"tool_result /message/output"}},
		{"CustomRole", `{"type":"message","id":"m","message":{"role":"custom","customType":"x","content":"note","display":true}}`,
			[]string{"system /message/content"}},
		{"CustomMessageEntry", `{"type":"custom_message","customType":"openclaw.runtime-context","content":"ctx","display":false,"id":"c"}`,
			[]string{"system /content"}},
		{"CustomMessageBlocks", `{"type":"custom_message","customType":"c","content":[{"type":"text","text":"t"},{"type":"image","data":"AA","mimeType":"image/png"}],"id":"c"}`,
			[]string{"system /content/0/text", "image /content/1"}},
		{"CompactionNever", `{"type":"compaction","id":"c","summary":"long summary","firstKeptEntryId":"x","tokensBefore":1}`, nil},
		{"CustomStateNever", `{"type":"custom","customType":"model-snapshot","data":{"provider":"p"},"id":"c"}`, nil},
		{"FlatToolResult", `{"__id":"e1","type":"tool_result","output":"big","_extractable":true,"__ts":"x","parentId":"p"}`,
			[]string{"tool_result /output"}},
		{"FlatThinkingByCustomType", `{"id":"e1","customType":"thinking","thinking":"hmm"}`,
			[]string{"thinking /thinking"}},
		{"FlatNested", `{"__id":"ent_123","data":{"thinking":"full"}}`,
			[]string{"thinking /data/thinking"}},
		{"FlatToolCall", `{"__id":"e","type":"tool_call","name":"exec","arguments":{"command":"ls -la"}}`,
			[]string{"tool_call /arguments/command"}},
		{"FlatUnknown", `{"__id":"e","type":"weird","x":"y"}`, nil},
		{"Malformed", `{"type":"message"`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := entry.Parse([]byte(tt.line), 1, 0)
			var got []string
			for _, c := range entry.Classify(e) {
				got = append(got, fmt.Sprintf("%s %s", c.Trigger, c.Pointer))
				raw := tt.line[c.Start:c.End]
				if c.Block && !(strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}")) {
					t.Errorf("block %s span is %q", c.Pointer, raw)
				}
				if !c.Block && !(strings.HasPrefix(raw, `"`) && strings.HasSuffix(raw, `"`)) {
					t.Errorf("string %s span is %q", c.Pointer, raw)
				}
			}
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Fatalf("candidates:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestClassifyCorpus checks on every corpus file that candidates never
// cover ids, roles or other envelope members, and that every trigger type
// the corpus is known to hold is found.
func TestClassifyCorpus(t *testing.T) {
	seen := map[bs.TriggerType]int{}
	for _, f := range corpusTranscripts(t) {
		r := openReader(t, f)
		for r.Next() {
			e := r.Entry()
			for _, c := range entry.Classify(e) {
				seen[c.Trigger]++
				for _, bad := range []string{"/id", "/parentId", "/type", "/message/role", "/message/toolCallId", "/message/toolName", "/summary"} {
					if c.Pointer == bad {
						t.Fatalf("%s:%d: envelope member %s classified as %s", f, r.Line(), bad, c.Trigger)
					}
				}
			}
		}
	}
	for _, tr := range []bs.TriggerType{bs.TriggerThinking, bs.TriggerToolResult, bs.TriggerToolCall, bs.TriggerImage, bs.TriggerAssistant, bs.TriggerUser} {
		if seen[tr] == 0 {
			t.Errorf("no %s values found in the corpus", tr)
		}
	}
	t.Logf("candidates by trigger: %v", seen)
}
