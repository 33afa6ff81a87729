package summarize

import (
	"strings"
	"testing"
)

func TestSerialize(t *testing.T) {
	long := strings.Repeat("é", ToolResultMaxChars+5)
	for _, tc := range []struct {
		name, line, want string
	}{
		{"user string", `{"type":"message","id":"1","message":{"role":"user","content":"hello"}}`, "[User]: hello"},
		{"user blocks joined", `{"type":"message","id":"1","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"xx"},{"type":"text","text":"b"}]}}`, "[User]: ab"},
		{"assistant parts", `{"type":"message","id":"2","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Done."},{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls -l","timeout":30}},{"type":"toolCall","id":"d","name":"read","arguments":{"path":"a b.txt"}}]}}`,
			"[Assistant thinking]: hmm\n\n[Assistant]: Done.\n\n[Assistant tool calls]: bash(command=\"ls -l\", timeout=30); read(path=\"a b.txt\")"},
		{"arguments kept in their order", `{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":{ "z" : 1 , "a" : [1, 2] }}]}}`,
			"[Assistant tool calls]: edit(z=1, a=[1,2])"},
		{"tool result truncated", `{"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"` + long + `"}]}}`,
			"[Tool result]: " + strings.Repeat("é", ToolResultMaxChars) + "\n\n[... 5 more characters truncated]"},
		{"bash execution", `{"type":"message","message":{"role":"bashExecution","command":"make","output":"err","exitCode":2}}`,
			"[User]: Ran `make`\n```\nerr\n```\n\nCommand exited with code 2"},
		{"excluded bash execution", `{"type":"message","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":0,"excludeFromContext":true}}`, ""},
		{"custom message", `{"type":"custom_message","id":"3","customType":"x","content":"runtime note","display":false}`, "[User]: runtime note"},
		{"branch summary", `{"type":"branch_summary","id":"4","fromId":"1","summary":"tried X"}`,
			"[User]: The conversation came back from another branch, summarized here:\n\n<summary>\ntried X\n</summary>"},
		{"compaction is the previous summary, not a message", `{"type":"compaction","id":"5","summary":"old","firstKeptEntryId":"1","tokensBefore":9}`, ""},
		{"settings are not messages", `{"type":"model_change","id":"6","provider":"p","modelId":"m"}`, ""},
		{"malformed", `{"type":"message"`, ""},
		{"flat tool result", `{"__id":"e1","type":"tool_result","output":"out"}`, "[Tool result]: out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Serialize([][]byte{[]byte(tc.line)}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBuildPrompt(t *testing.T) {
	user := []byte(`{"type":"message","message":{"role":"user","content":"hi"}}`)
	comp := []byte(`{"type":"compaction","summary":"## Goal\nold goal","firstKeptEntryId":"1","tokensBefore":9}`)
	p := BuildPrompt([][]byte{user}, "", Normal)
	if p.PreviousSummary != "" || strings.Contains(p.User, "<previous-summary>") || !strings.Contains(p.User, "Write a structured checkpoint summary") {
		t.Errorf("first-summary prompt wrong:\n%s", p.User)
	}
	if strings.Contains(p.User, "Additional focus") || strings.Contains(p.User, "TERSE") {
		t.Error("normal prompt without focus has focus or brevity text")
	}
	for _, h := range []string{"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"} {
		if !strings.Contains(p.User, h) {
			t.Errorf("prompt lacks %q", h)
		}
	}
	p = BuildPrompt([][]byte{comp, user}, "  the parser  ", Aggressive)
	if p.PreviousSummary != "## Goal\nold goal" || !strings.Contains(p.User, "<previous-summary>\n## Goal\nold goal\n</previous-summary>") || !strings.Contains(p.User, "NEW messages") {
		t.Errorf("update prompt wrong:\n%s", p.User)
	}
	if !strings.HasSuffix(p.User, "\n\nAdditional focus: the parser") || !strings.Contains(p.User, "under 150 words") {
		t.Errorf("aggressive prompt with focus wrong:\n%s", p.User)
	}
	if p.System != SystemPrompt {
		t.Error("system prompt")
	}
}

func TestAggressiveElidesLongConversations(t *testing.T) {
	var lines [][]byte
	for range 600 {
		lines = append(lines, []byte(`{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"`+strings.Repeat("t", 1000)+`"},{"type":"text","text":"`+strings.Repeat("w", 500)+`"}]}}`))
	}
	n := BuildPrompt(lines, "", Normal)
	a := BuildPrompt(lines, "", Aggressive)
	if !strings.Contains(n.User, "[Assistant thinking]") || strings.Contains(a.User, "[Assistant thinking]") {
		t.Error("aggressive prompt keeps thinking or normal prompt drops it")
	}
	if a.InputChars > aggressiveMaxChars+200 || !strings.Contains(a.User, "characters of the conversation left out") {
		t.Errorf("aggressive conversation is %d bytes", a.InputChars)
	}
}
