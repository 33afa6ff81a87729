package tokens

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecode checks the JSON string decoder against encoding/json.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\d\/e"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d x"`, `"\udc00"`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var want string
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || json.Unmarshal([]byte(q), &want) != nil || !utf8.ValidString(q) {
			return
		}
		if got := string(decode([]byte(q))); got != want {
			t.Errorf("decode(%q) = %q, want %q", q, got, want)
		}
	})
}

// TestMeasureFindsBlocksBySpan counts a content block by the block that
// holds it, not by its index into the parsed blocks: a content array
// whose first element is not an object still has its text counted.
func TestMeasureFindsBlocksBySpan(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"objects only", `{"type":"message","id":"a1","message":{"role":"user","content":[{"type":"text","text":"12345678"}]}}`},
		{"a string element first", `{"type":"message","id":"a1","message":{"role":"user","content":["x",{"type":"text","text":"12345678"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := measure([]byte(tc.line), 1, []Tokenizer{CharsPer4{}})
			if !ok {
				t.Fatal("not measured")
			}
			if got := m.toks[0][classText]; got != 2 {
				t.Errorf("text tokens = %d, want 2 (the text block's 8 characters)", got)
			}
		})
	}
}
