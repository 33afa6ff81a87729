package agenttext

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A tool result's text is kept as the JSON string literals the host wrote,
// and it may hold what a Go string cannot: a lone surrogate escape such as
// \ud83d (JavaScript writes one when a string is cut inside an emoji).
// Decoding such a literal into a Go string turns the surrogate into U+FFFD,
// so the text is paged and split on the literal's bytes instead: each page
// is a slice of the literal, cut between units, and the host's JSON.parse
// gets back exactly the UTF-16 code units it wrote.
//
// A unit of a literal's body (the bytes between its quotes) is one raw
// UTF-8 sequence, one simple escape (\n, \", …), one \uXXXX escape, or a
// surrogate pair of \uXXXX escapes. Each unit is one character; a lone
// surrogate escape is one character of host weight 1.

// literalUnit returns the length in bytes of the unit of body that starts
// at byte i, the code point it stands for (utf8.RuneError for a lone
// surrogate or an invalid byte) and its length in UTF-16 code units.
func literalUnit(body []byte, i int) (size int, r rune, units int) {
	c := body[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return 1, rune(c), 1
		}
		r, size := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && size <= 1 {
			return 1, utf8.RuneError, 1
		}
		return size, r, utf16.RuneLen(r)
	}
	if i+1 >= len(body) {
		return 1, utf8.RuneError, 1
	}
	if body[i+1] != 'u' {
		return 2, rune(body[i+1]), 1
	}
	u, ok := hex4(body, i+2)
	if !ok {
		return 2, utf8.RuneError, 1
	}
	switch {
	case u >= 0xD800 && u < 0xDC00:
		if i+11 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
			if lo, ok := hex4(body, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
				return 12, utf16.DecodeRune(u, lo), 2
			}
		}
		return 6, utf8.RuneError, 1
	case u >= 0xDC00 && u < 0xE000:
		return 6, utf8.RuneError, 1
	}
	return 6, u, 1
}

// hex4 reads the four hex digits of a \u escape at body[i:].
func hex4(body []byte, i int) (rune, bool) {
	if i+4 > len(body) {
		return 0, false
	}
	var v rune
	for _, c := range body[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// literalWeight is a unit's share of HostChars: a lone surrogate (or an
// invalid byte) weighs 1.
func literalWeight(body []byte, i int) (size, weight int) {
	size, r, _ := literalUnit(body, i)
	if r == utf8.RuneError {
		return size, 1
	}
	return size, hostWeight(r)
}

// LiteralBody returns the body of a JSON string literal (the bytes between
// its quotes), or an error when lit is not a string literal.
func LiteralBody(lit []byte) ([]byte, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, fmt.Errorf("expected a JSON string literal, found %.40q", lit)
	}
	return lit[1 : len(lit)-1], nil
}

// LiteralChars is the length in characters (units) of a literal body.
func LiteralChars(body []byte) int {
	n := 0
	for i := 0; i < len(body); n++ {
		size, _, _ := literalUnit(body, i)
		i += size
	}
	return n
}

// LiteralUTF16Len is the length of a literal body's string in UTF-16 code
// units (its JavaScript length).
func LiteralUTF16Len(body []byte) int {
	n := 0
	for i := 0; i < len(body); {
		size, _, u := literalUnit(body, i)
		i, n = i+size, n+u
	}
	return n
}

// SplitLiteral cuts a literal body into consecutive bodies of at most max
// UTF-16 code units each, between units (a surrogate pair is never cut),
// that concatenate to body.
func SplitLiteral(body []byte, max int) [][]byte {
	var parts [][]byte
	start, n := 0, 0
	for i := 0; i < len(body); {
		size, _, u := literalUnit(body, i)
		if n > 0 && n+u > max {
			parts = append(parts, body[start:i])
			start, n = i, 0
		}
		i, n = i+size, n+u
	}
	return append(parts, body[start:])
}

// PageOfLiteral returns the page of a text held as a JSON string
// literal's body (the text blocks' literal bodies concatenated) that
// starts at character offset and holds at most maxChars characters
// (CheckPage's rules), and fewer when the host would count them as more
// than maxChars (HostChars): text of astral or CJK characters comes in
// shorter pages. Offsets count units (characters; a lone surrogate escape
// is one), and the page's Raw is the slice of body it holds, which a JSON
// text block carries as it is; Text is that slice decoded (a lone
// surrogate becomes U+FFFD there, not in Raw). An offset at or beyond the
// end of a non-empty text is an error that names the valid offsets; the
// empty text has one empty page at offset 0. Number and Pages count the
// pages a reader gets paging from offset 0 (from offset on when offset is
// not where one of those starts). It is the one paging rule of the
// agent's tools, the plugin's and the purge_control command's.
func PageOfLiteral(body []byte, offset, maxChars int) (*Page, error) {
	if err := CheckPage(offset, maxChars); err != nil {
		return nil, err
	}
	total := LiteralChars(body)
	if offset > 0 && total == 0 {
		return nil, fmt.Errorf("offset: expected 0 (the text is empty), found %d", offset)
	}
	if offset > 0 && offset >= total {
		return nil, fmt.Errorf("offset: expected 0…%d (the text has %s characters), found %d", total-1, Num(total), offset)
	}
	// The page's number: one more than the pages from 0 that start
	// before offset.
	before := 0
	for i, c := 0, 0; c < offset; before++ {
		e, k := literalPageEnd(body, i, maxChars)
		i, c = e, c+k
	}
	start := literalIndex(body, 0, offset)
	stop, n := literalPageEnd(body, start, maxChars)
	p := &Page{Offset: offset, End: offset + n, TotalChars: total, MaxChars: maxChars, Raw: body[start:stop]}
	var text string
	if err := json.Unmarshal(append(append([]byte{'"'}, p.Raw...), '"'), &text); err != nil {
		return nil, fmt.Errorf("text: expected a JSON string literal: %v", err)
	}
	p.Text = text
	if p.End < total {
		next := p.End
		p.NextOffset = &next
	}
	p.Number = before + 1
	p.Pages = p.Number
	for i := stop; i < len(body); p.Pages++ {
		i, _ = literalPageEnd(body, i, maxChars)
	}
	return p, nil
}

// literalPageEnd returns the end (a byte index) and the length in units
// of the page of body that starts at byte index start: at most maxChars
// units whose host weights add up to at most maxChars, and at least one
// unit when any is left.
func literalPageEnd(body []byte, start, maxChars int) (int, int) {
	i, n, w := start, 0, 0
	for i < len(body) && n < maxChars {
		size, cw := literalWeight(body, i)
		if n > 0 && w+cw > maxChars {
			break
		}
		i, n, w = i+size, n+1, w+cw
	}
	return i, n
}

// literalIndex returns the byte index in body of the unit n units after
// byte index from.
func literalIndex(body []byte, from, n int) int {
	i := from
	for ; n > 0 && i < len(body); n-- {
		size, _, _ := literalUnit(body, i)
		i += size
	}
	return i
}
