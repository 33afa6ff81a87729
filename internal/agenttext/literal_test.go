package agenttext_test

import (
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

func TestLiteralUnits(t *testing.T) {
	for _, tc := range []struct {
		body          string
		chars, utf16n int
	}{
		{`abc`, 3, 3},
		{`a\nb\"`, 4, 4},
		{`\ud83d`, 1, 1},
		{`\ud83d\ude00`, 1, 2},
		{`\ud83d\u0041`, 2, 2},
		{`\uDE00\ud83d`, 2, 2},
		{"😀中é", 3, 4},
		{`\u00e9\\`, 2, 2},
	} {
		if c, u := agenttext.LiteralChars([]byte(tc.body)), agenttext.LiteralUTF16Len([]byte(tc.body)); c != tc.chars || u != tc.utf16n {
			t.Errorf("%s: %d characters, %d UTF-16 units; want %d, %d", tc.body, c, u, tc.chars, tc.utf16n)
		}
	}
}

// TestPageOfLiteral pages a literal with a lone surrogate at the page
// boundary: the pages are slices of the literal that concatenate to it,
// a pair is never cut, and a lone surrogate is one character (as U+FFFD
// is in the decoded text).
func TestPageOfLiteral(t *testing.T) {
	body := strings.Repeat("x", 999) + `\ud83d` + strings.Repeat("y", 999) + `\ud83d\ude00` + strings.Repeat("z", 500)
	var got strings.Builder
	offsets := []int{}
	for off := 0; ; {
		p, err := agenttext.PageOfLiteral([]byte(body), off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, off)
		got.Write(p.Raw)
		if p.Last() {
			if p.Pages != len(offsets) || p.Number != len(offsets) || p.TotalChars != 2500 {
				t.Fatalf("last page %+v after offsets %v", p, offsets)
			}
			break
		}
		off = *p.NextOffset
	}
	if got.String() != body || len(offsets) != 3 || offsets[1] != 1000 || offsets[2] != 1999 {
		t.Fatalf("offsets %v; concatenation equal: %v", offsets, got.String() == body)
	}
	// The pair at 1999 weighs 2: the second page ends before it.
	if _, err := agenttext.PageOfLiteral([]byte(body), 2500, 1000); err == nil {
		t.Fatal("offset at the end: no error")
	}
}

func TestSplitLiteral(t *testing.T) {
	parts := agenttext.SplitLiteral([]byte(`ab\ud83d\ude00c\ud83d`), 2)
	want := []string{`ab`, `\ud83d\ude00`, `c\ud83d`}
	if len(parts) != len(want) {
		t.Fatalf("parts %q", parts)
	}
	for i := range want {
		if string(parts[i]) != want[i] {
			t.Fatalf("parts %q, want %q", parts, want)
		}
	}
}
