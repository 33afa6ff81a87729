package agenttext_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

// pageOf pages text as the tools do: on the body of its JSON literal.
func pageOf(t *testing.T, text string, offset, maxChars int) (*agenttext.Page, error) {
	t.Helper()
	lit, err := json.Marshal(text)
	if err != nil {
		t.Fatal(err)
	}
	return agenttext.PageOfLiteral(lit[1:len(lit)-1], offset, maxChars)
}

// TestPageOf pages decoded texts through their literals: characters,
// host weights, page numbers and the errors that name the valid offsets.
func TestPageOf(t *testing.T) {
	astral := strings.Repeat("é😀中a", 1_000) // 4,000 characters, HostChars 8,000
	ascii := strings.Repeat("0123456789", 250)
	cjk := strings.Repeat("中", 5_000)
	for _, tc := range []struct {
		name          string
		text          string
		offset, max   int
		end, next     int // next -1: the last page
		number, pages int
		err           string
	}{
		{"whole", "héllo", 0, 1000, 5, -1, 1, 1, ""},
		{"empty", "", 0, 1000, 0, -1, 1, 1, ""},
		{"ascii first", ascii, 0, 1000, 1000, 1000, 1, 3, ""},
		{"ascii unaligned", ascii, 1500, 1000, 2500, -1, 3, 3, ""},
		{"ascii last", ascii, 2000, 1000, 2500, -1, 3, 3, ""},
		{"astral first", astral, 0, 1000, 500, 500, 1, 8, ""},
		{"astral offset 1", astral, 1, 1000, 501, 501, 2, 9, ""},
		{"last char", astral, 3999, 1000, 4000, -1, 9, 9, ""},
		{"cjk", cjk, 250, 1000, 500, 500, 2, 20, ""},
		{"at the end", astral, 4000, 1000, 0, 0, 0, 0, "offset: expected 0…3999 (the text has 4,000 characters), found 4000"},
		{"empty text offset", "", 1, 1000, 0, 0, 0, 0, "offset: expected 0 (the text is empty), found 1"},
		{"negative", astral, -1, 1000, 0, 0, 0, 0, "offset: expected an integer ≥ 0"},
		{"max too small", astral, 0, 999, 0, 0, 0, 0, "max_chars: expected an integer from 1,000 to 100,000, found 999"},
		{"max too large", astral, 0, 100_001, 0, 0, 0, 0, "found 100001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pageOf(t, tc.text, tc.offset, tc.max)
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
			rs := []rune(tc.text)
			if p.Text != string(rs[tc.offset:p.End]) || !utf8.ValidString(p.Text) || p.End != tc.end || next != tc.next ||
				p.Number != tc.number || p.Pages != tc.pages || agenttext.HostChars(p.Text) > tc.max {
				t.Fatalf("page %+v (next %d, host chars %d), text %.20q; want end %d, next %d, page %d of %d",
					p, next, agenttext.HostChars(p.Text), p.Text, tc.end, tc.next, tc.number, tc.pages)
			}
		})
	}
	// The pages from any offset reassemble the rest of the text exactly.
	for _, text := range []string{astral, ascii, cjk} {
		var b strings.Builder
		for off := 7; ; {
			p, err := pageOf(t, text, off, 1000)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(p.Text)
			if p.Last() {
				break
			}
			off = *p.NextOffset
		}
		if b.String() != string([]rune(text)[7:]) {
			t.Fatalf("the pages of %.10q do not reassemble it", text)
		}
	}
}

func TestHostChars(t *testing.T) {
	if got := agenttext.HostChars("a·é中가😀𠀀ｱ"); got != 1+4+1+4+4+2+16+8 {
		t.Fatalf("HostChars %d", got)
	}
}

func TestPageHeader(t *testing.T) {
	p, _ := pageOf(t, strings.Repeat("x", 200_000), 15_000, agenttext.DefaultPageChars)
	if got, want := agenttext.PageHeader("tc-X", p), `[BrainSurgeon tc-X: characters 15,000–30,000 of 200,000 (page 2 of 14). Next: purge_control {"action":"restore","value_id":"tc-X","offset":30000}]`; got != want {
		t.Fatalf("header\n%s\nwant\n%s", got, want)
	}
}
