package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExtractFacts feeds arbitrary lines to the extraction, the
// deterministic summary and the prompt: none may panic, the summary stays
// within its limit and is valid UTF-8, and the facts encode with every
// list present.
func FuzzExtractFacts(f *testing.F) {
	if b, err := os.ReadFile("testdata/synthetic.jsonl"); err == nil {
		for _, l := range splitLines(b) {
			f.Add(l)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"type":"message"}`, `{"type":"message","message":null}`,
		`{"type":"message","message":{"role":"user","content":"a\ud800b"}}`,
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":"{\"path\":\"x.go\"}"}]}}`,
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"read","arguments":{"path":7}}]}}`,
		`{"type":"message","message":{"role":"toolResult","toolCallId":"c","isError":true,"content":[{"type":"text","text":"` + strings.Repeat("é", 400) + `"}]}}{"glued":1}`,
		`{"type":"compaction","summary":5,"details":{"readFiles":[1,"a"],"modifiedFiles":"b"}}`,
		"{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff byte `x.go`\"}]}}",
		`{"__id":"e1","type":"tool_result","output":"error: boom"}`,
	} {
		f.Add([]byte(s))
	}
	d := &Deterministic{MaxBytes: 2000, MinBytes: 300}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Split(data, []byte("\n"))
		facts := ExtractFacts(lines)
		b, err := json.Marshal(facts)
		if err != nil {
			t.Fatalf("facts do not encode: %v", err)
		}
		if bytes.Contains(b, []byte(":null")) {
			t.Fatalf("facts have a null list: %s", b)
		}
		sum, err := d.Summarize(context.Background(), lines, "focus x.go")
		s, degraded := sum.Text, sum.Degraded
		if err != nil || !degraded {
			t.Fatalf("summary: %v, degraded %v", err, degraded)
		}
		if len(s) > d.Limit(len(data)) {
			t.Fatalf("summary %d bytes over its limit %d", len(s), d.Limit(len(data)))
		}
		if !utf8.ValidString(s) {
			t.Fatalf("summary is not valid UTF-8: %q", s)
		}
		_ = BuildPrompt(lines, "x", Normal)
		_ = BuildPrompt(lines, "", Aggressive)
	})
}
