package agenttext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A long restored value is returned in pages, because a host caps the
// text of every tool result it hands to the model. Offsets and lengths
// count characters, that is Unicode code points of the text, so that a
// page never splits a character and the pages of a text concatenate to
// the exact text.
const (
	// DefaultPageChars is the page length when none is asked for: below
	// the smallest cap a host puts on a tool result.
	DefaultPageChars = 15_000
	// MinPageChars and MaxPageChars bound the page length one may ask for.
	MinPageChars = 1_000
	MaxPageChars = 100_000
)

// Page is one page of a text.
type Page struct {
	// Offset and End are the characters the page holds: [Offset, End).
	Offset int `json:"offset"`
	End    int `json:"end"`
	// NextOffset is the offset of the next page, or nil on the last page.
	NextOffset *int `json:"next_offset"`
	// TotalChars is the length of the whole text in characters.
	TotalChars int `json:"total_chars"`
	// MaxChars is the page length asked for.
	MaxChars int `json:"max_chars"`
	// Number and Pages are the page's number (from 1) and how many pages
	// the text has when paged at MaxChars from Offset's alignment.
	Number int `json:"page"`
	Pages  int `json:"pages"`
	// Text is the page's characters.
	Text string `json:"-"`
}

// Last reports whether p is the text's last page.
func (p *Page) Last() bool { return p.NextOffset == nil }

// CheckPage checks the page members of a request: offset ≥ 0 and
// maxChars from MinPageChars to MaxPageChars.
func CheckPage(offset, maxChars int) error {
	if offset < 0 {
		return fmt.Errorf("offset: expected an integer ≥ 0 (a character offset), found %d", offset)
	}
	if maxChars < MinPageChars || maxChars > MaxPageChars {
		return fmt.Errorf("max_chars: expected an integer from %s to %s, found %d", Num(MinPageChars), Num(MaxPageChars), maxChars)
	}
	return nil
}

// CharLen is the length of text in characters (code points; an invalid
// UTF-8 byte counts as one).
func CharLen(text string) int { return utf8.RuneCountInString(text) }

// PageOf returns the page of text that starts at character offset and
// holds at most maxChars characters (CheckPage's rules). An offset at or
// beyond the end of a non-empty text is an error that names the valid
// offsets; the empty text has one empty page at offset 0.
func PageOf(text string, offset, maxChars int) (*Page, error) {
	if err := CheckPage(offset, maxChars); err != nil {
		return nil, err
	}
	total := CharLen(text)
	if offset > 0 && total == 0 {
		return nil, fmt.Errorf("offset: expected 0 (the text is empty), found %d", offset)
	}
	if offset > 0 && offset >= total {
		return nil, fmt.Errorf("offset: expected 0…%d (the text has %s characters), found %d", total-1, Num(total), offset)
	}
	start := byteIndex(text, 0, offset)
	end := offset + min(maxChars, total-offset)
	stop := byteIndex(text, start, end-offset)
	p := &Page{Offset: offset, End: end, TotalChars: total, MaxChars: maxChars, Text: text[start:stop]}
	if end < total {
		next := end
		p.NextOffset = &next
	}
	before := (offset + maxChars - 1) / maxChars
	p.Number = before + 1
	p.Pages = before + (total-offset+maxChars-1)/maxChars
	if p.Pages < p.Number {
		p.Pages = p.Number
	}
	return p, nil
}

// byteIndex returns the byte index in text of the character n characters
// after byte index from.
func byteIndex(text string, from, n int) int {
	i := from
	for ; n > 0 && i < len(text); n-- {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return i
}

// SourcePage writes the purge_control command's text for one page of a
// tool result stored at the source: the page's header (PageHeader, whose
// next call is the command's), then the page's characters, ended by a line
// break when they end without one.
func SourcePage(w io.Writer, key string, p *Page) {
	io.WriteString(w, pageHeader(key, p, func(next int) string {
		return fmt.Sprintf("purge_control restore %s --offset %d --max-chars %d", key, next, p.MaxChars)
	}))
	io.WriteString(w, "\n")
	io.WriteString(w, p.Text)
	if !strings.HasSuffix(p.Text, "\n") {
		io.WriteString(w, "\n")
	}
}

// PageHeader is the line that comes before a page of the value key: the
// characters it holds and the purge_control tool call that gets the next
// page (that call names max_chars when the page length is not the
// default).
func PageHeader(key string, p *Page) string {
	return pageHeader(key, p, func(next int) string {
		call := `purge_control {"action":"restore","key":` + strconv.Quote(key) + `,"offset":` + strconv.Itoa(next)
		if p.MaxChars != DefaultPageChars {
			call += `,"max_chars":` + strconv.Itoa(p.MaxChars)
		}
		return call + "}"
	})
}

func pageHeader(key string, p *Page, nextCall func(next int) string) string {
	s := fmt.Sprintf("[BrainSurgeon %s: characters %s–%s of %s (page %d of %d", key, Num(p.Offset), Num(p.End), Num(p.TotalChars), p.Number, p.Pages)
	if p.Last() {
		return s + ", the last page).]"
	}
	return s + "). Next: " + nextCall(*p.NextOffset) + "]"
}
