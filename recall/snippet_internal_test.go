package recall

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// TestSnippetProperties: a snippet is valid UTF-8, holds at most n
// characters besides its "…" marks, holds the whole match when the match
// fits, has no control characters, and is marked where text was cut.
func TestSnippetProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := []byte(rapid.StringOf(rapid.RuneFrom([]rune("ab\n\té漢😀 "))).Draw(t, "text"))
		if len(text) == 0 {
			return
		}
		// A match on character boundaries.
		var bounds []int
		for i := range string(text) {
			bounds = append(bounds, i)
		}
		bounds = append(bounds, len(text))
		i := rapid.IntRange(0, len(bounds)-1).Draw(t, "i")
		j := rapid.IntRange(i, len(bounds)-1).Draw(t, "j")
		s, end := bounds[i], bounds[j]
		n := rapid.IntRange(1, 40).Draw(t, "n")
		got := snippet(text, s, end, n)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(got, "…"), "…")
		if c := utf8.RuneCountInString(body); c > n {
			t.Fatalf("%d characters, want at most %d: %q", c, n, got)
		}
		if strings.ContainsAny(body, "\n\t") {
			t.Fatalf("control character in %q", got)
		}
		match := strings.NewReplacer("\n", " ", "\t", " ").Replace(string(text[s:end]))
		if utf8.RuneCountInString(match) <= n && !strings.Contains(body, match) {
			t.Fatalf("snippet %q lacks the match %q", got, match)
		}
		if utf8.RuneCount(text) <= n && body != strings.NewReplacer("\n", " ", "\t", " ").Replace(string(text)) {
			t.Fatalf("short text cut: %q", got)
		}
	})
}
