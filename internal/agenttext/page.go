package agenttext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A long restored value is returned in pages, because a host caps the
// text of every tool result it hands to the model. Offsets and lengths
// count characters, that is Unicode code points of the text, so that a
// page never splits a character and the pages of a text concatenate to
// the exact text (PageOfLiteral). A page also stays within its length as the host counts
// it (HostChars), so a page of CJK text or emoji holds fewer characters.
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
	// MaxChars is the page length asked for: the most characters a page
	// holds, and the most its text may count as HostChars.
	MaxChars int `json:"max_chars"`
	// Number and Pages are the page's number (from 1) and how many pages
	// the text has when paged at MaxChars from Offset's alignment.
	Number int `json:"page"`
	Pages  int `json:"pages"`
	// Text is the page's characters.
	Text string `json:"-"`
	// Raw is, for a page of a literal (PageOfLiteral), the page's slice of
	// the literal's body: Text exactly, lone surrogates included.
	Raw []byte `json:"-"`
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

// HostChars is the length of text as OpenClaw counts a tool result's text
// against its cap: UTF-16 code units (a JavaScript string's length), with
// CJK, Hangul and some other wide characters weighing more (4 to 16), as
// its token estimate does. A page's HostChars stay at most its max_chars.
func HostChars(text string) int {
	n := 0
	for _, r := range text {
		n += hostWeight(r)
	}
	return n
}

// wideRanges are the characters OpenClaw weighs more than their UTF-16
// length when it measures a tool result, with their weight.
var wideRanges = []struct {
	lo, hi rune
	weight int
}{
	{0xB7, 0xB7, 4}, {0x2C7, 0x2C7, 8}, {0x2C9, 0x2CB, 8}, {0x2D9, 0x2D9, 8}, {0x2EA, 0x2EB, 8},
	{0x305, 0x305, 8}, {0x323, 0x323, 8}, {0x1100, 0x11FF, 12}, {0x2E80, 0x2FFF, 12},
	{0x3000, 0x319F, 4}, {0x31A0, 0x4DFF, 12}, {0x4E00, 0x9FA5, 4}, {0x9FA6, 0x9FFF, 12},
	{0xA000, 0xA4FF, 12}, {0xA700, 0xA707, 12}, {0xA960, 0xA97F, 12}, {0xAC00, 0xD7AF, 4},
	{0xD7B0, 0xD7FF, 12}, {0xF900, 0xFAFF, 12}, {0xFE10, 0xFE4F, 8}, {0xFF01, 0xFF60, 4},
	{0xFF61, 0xFFDC, 8}, {0xFFE0, 0xFFE6, 8}, {0x16FE0, 0x16FFF, 16}, {0x1AFF0, 0x1AFFF, 16},
	{0x1B000, 0x1B16F, 16}, {0x1D360, 0x1D371, 12}, {0x1F200, 0x1F2FF, 16}, {0x20000, 0x2FA1F, 16},
	{0x30000, 0x3347F, 16},
}

// hostWeight is one character's share of HostChars.
func hostWeight(r rune) int {
	if r < 0xB7 {
		return 1
	}
	lo, hi := 0, len(wideRanges)
	for lo < hi {
		m := (lo + hi) / 2
		switch w := wideRanges[m]; {
		case r < w.lo:
			hi = m
		case r > w.hi:
			lo = m + 1
		default:
			return w.weight
		}
	}
	if r > 0xFFFF {
		return 2
	}
	return 1
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
// page. That call names the value with value_id (OpenClaw masks an
// argument named key in its transcript) and names max_chars when the page
// length is not the default.
func PageHeader(key string, p *Page) string {
	return pageHeader(key, p, func(next int) string {
		call := `purge_control {"action":"restore","value_id":` + strconv.Quote(key) + `,"offset":` + strconv.Itoa(next)
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
