package agenttext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

func TestPageOf(t *testing.T) {
	astral := strings.Repeat("é😀中a", 1_000) // 4,000 characters
	for _, tc := range []struct {
		name               string
		text               string
		offset, max        int
		want               string
		next, number, pags int // next -1: the last page
		err                string
	}{
		{"whole", "héllo", 0, 1000, "héllo", -1, 1, 1, ""},
		{"empty", "", 0, 1000, "", -1, 1, 1, ""},
		{"first", astral, 0, 1000, string([]rune(astral)[:1000]), 1000, 1, 4, ""},
		{"astral offset", astral, 1, 1000, string([]rune(astral)[1:1001]), 1001, 2, 5, ""},
		{"last", astral, 3000, 1000, string([]rune(astral)[3000:]), -1, 4, 4, ""},
		{"last char", astral, 3999, 1000, "a", -1, 5, 5, ""},
		{"at the end", astral, 4000, 1000, "", 0, 0, 0, "offset: expected 0…3999 (the text has 4,000 characters), found 4000"},
		{"empty text offset", "", 1, 1000, "", 0, 0, 0, "offset: expected 0 (the text is empty), found 1"},
		{"negative", astral, -1, 1000, "", 0, 0, 0, "offset: expected an integer ≥ 0"},
		{"max too small", astral, 0, 999, "", 0, 0, 0, "max_chars: expected an integer from 1,000 to 100,000, found 999"},
		{"max too large", astral, 0, 100_001, "", 0, 0, 0, "found 100001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := agenttext.PageOf(tc.text, tc.offset, tc.max)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			next := -1
			if p.NextOffset != nil {
				next = *p.NextOffset
			}
			if p.Text != tc.want || !utf8.ValidString(p.Text) || next != tc.next || p.Number != tc.number || p.Pages != tc.pags {
				t.Fatalf("page %+v (next %d), text %.20q; want next %d, page %d of %d", p, next, p.Text, tc.next, tc.number, tc.pags)
			}
		})
	}
}

func TestPageHeader(t *testing.T) {
	p, _ := agenttext.PageOf(strings.Repeat("x", 200_000), 15_000, agenttext.DefaultPageChars)
	if got, want := agenttext.PageHeader("tc-X", p), `[BrainSurgeon tc-X: characters 15,000–30,000 of 200,000 (page 2 of 14). Next: purge_control {"action":"restore","key":"tc-X","offset":30000}]`; got != want {
		t.Fatalf("header\n%s\nwant\n%s", got, want)
	}
}
