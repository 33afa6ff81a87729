package tokens_test

import (
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/tokens"
)

func TestRecordedUsage(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		want     tokens.Usage
		ok       bool
		answered bool
	}{
		{"pi names", `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"anthropic","model":"m","stopReason":"stop","usage":{"input":10,"output":5,"cacheRead":100,"cacheWrite":20,"totalTokens":135}}}`,
			tokens.Usage{Provider: "anthropic", Model: "m", StopReason: "stop", Context: 130, Output: 5, Total: 135}, true, true},
		{"no totalTokens", `{"message":{"role":"assistant","usage":{"input":10,"output":5}}}`,
			tokens.Usage{Context: 10, Output: 5, Total: 15}, true, true},
		{"anthropic names", `{"type":"assistant","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":5,"output_tokens":6}}}`,
			tokens.Usage{Context: 12, Output: 6, Total: 18}, true, true},
		{"openai names", `{"message":{"usage":{"prompt_tokens":7,"completion_tokens":2}}}`,
			tokens.Usage{Context: 7, Output: 2, Total: 9}, true, true},
		{"the line's own usage", `{"type":"assistant","provider":"x","usage":{"input":1}}`,
			tokens.Usage{Provider: "x", Context: 1, Total: 1}, true, true},
		{"no usage", `{"message":{"role":"assistant","provider":"p","model":"m","stopReason":"toolUse"}}`,
			tokens.Usage{Provider: "p", Model: "m", StopReason: "toolUse"}, false, true},
		{"null usage", `{"message":{"usage":null}}`, tokens.Usage{}, false, true},
		{"usage not an object", `{"message":{"usage":"x"}}`, tokens.Usage{}, false, true},
		{"provider not a string", `{"message":{"provider":3,"usage":{"input":1}}}`, tokens.Usage{Context: 1, Total: 1}, true, true},
		{"openclaw mirror", `{"message":{"provider":"openclaw","usage":{"input":9}}}`, tokens.Usage{Provider: "openclaw", Context: 9, Total: 9}, true, false},
		{"clawdbot mirror", `{"message":{"provider":"clawdbot","usage":{"input":9}}}`, tokens.Usage{Provider: "clawdbot", Context: 9, Total: 9}, true, false},
		{"error", `{"message":{"stopReason":"error","usage":{"input":9}}}`, tokens.Usage{StopReason: "error", Context: 9, Total: 9}, true, false},
		{"aborted", `{"message":{"stopReason":"aborted","usage":{"input":9}}}`, tokens.Usage{StopReason: "aborted", Context: 9, Total: 9}, true, false},
		{"not JSON", `{"message":`, tokens.Usage{}, false, true},
		{"the line's usage beside a message without one", `{"usage":{"input":4},"message":{"role":"assistant","model":"m"}}`,
			tokens.Usage{Model: "m", Context: 4, Total: 4}, true, true},
		{"a member named twice: the last counts", `{"message":{"provider":"a","provider":"b","usage":{"input":1},"usage":{"input":2}}}`,
			tokens.Usage{Provider: "b", Context: 2, Total: 2}, true, true},
		{"big content skipped", `{"message":{"content":[{"type":"text","text":"` + strings.Repeat(`x\n`, 5000) + `"}],"usage":{"input":3}}}`,
			tokens.Usage{Context: 3, Total: 3}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tokens.RecordedUsage([]byte(tt.line))
			if got != tt.want || ok != tt.ok {
				t.Errorf("RecordedUsage = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if a := got.Answered(); a != tt.answered {
				t.Errorf("Answered = %v, want %v", a, tt.answered)
			}
		})
	}
}
