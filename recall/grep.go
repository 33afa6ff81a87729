package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// Defaults of GrepOptions.
const (
	// DefaultMaxHits is the number of hits Grep yields at most when
	// GrepOptions.MaxHits is 0.
	DefaultMaxHits = 100
	// DefaultSnippetChars is the length of a hit's snippet in characters
	// when GrepOptions.SnippetChars is 0.
	DefaultSnippetChars = 160
)

// GrepOptions tunes Grep. The zero value searches for plain text, case
// sensitive, everywhere, and yields at most DefaultMaxHits hits.
type GrepOptions struct {
	// Regexp makes the pattern a regular expression (RE2 syntax, package
	// regexp); otherwise it is plain text.
	Regexp bool
	// IgnoreCase matches letters of either case (ASCII letters for a
	// plain ASCII pattern, Unicode case folding otherwise).
	IgnoreCase bool
	// MaxHits bounds the hits yielded: 0 means DefaultMaxHits, a negative
	// value no bound.
	MaxHits int
	// SnippetChars is the length of a hit's snippet in characters: 0
	// means DefaultSnippetChars.
	SnippetChars int
	// In restricts the search to these places; empty means all four.
	In []Where
	// Logger receives a warning for each side record that cannot be read
	// (the search goes on without it); nil discards.
	Logger bs.Logger
}

// Hit is one match.
type Hit struct {
	// EntryID is the id of the entry the match is in ("" for a line
	// without one: a v1 entry, a malformed line).
	EntryID string `json:"entry_id"`
	// Line is the entry's line number (0 for an extracted value whose
	// entry is no longer in the transcript).
	Line int `json:"line"`
	// Where is where the match was found.
	Where Where `json:"where"`
	// EntryWhere is, for an extracted value, where its entry is now
	// (active, compacted or off_path; "" when the entry is gone); for a
	// transcript line it equals Where.
	EntryWhere Where `json:"entry_where"`
	// Type and Role are the entry's type and message role, when known.
	Type string `json:"type,omitempty"`
	Role string `json:"role,omitempty"`
	// Pointer is the JSON Pointer of the string value the match is in
	// ("" for a match in the raw text of a malformed line).
	Pointer string `json:"pointer"`
	// Offset is the match's byte offset in the decoded value.
	Offset int `json:"offset"`
	// Snippet is the text around the match, at most SnippetChars
	// characters, with line breaks and tabs shown as spaces and "…" where
	// it was cut.
	Snippet string `json:"snippet"`
}

// matcher finds a pattern in decoded text.
type matcher struct {
	re  *regexp.Regexp
	lit []byte // plain, case-sensitive
	// fold is a plain ASCII pattern matched ignoring ASCII case, lowered;
	// low is scratch space for the lowered text.
	fold, low []byte
	// raw says the pattern may be searched for in a line's raw JSON first
	// (when the line holds no \u escape): a decoded value can then only
	// hold the pattern if the raw line does. pre, for a regular
	// expression, is the literal every match starts with, searched for
	// in the raw line the same way.
	raw bool
	pre []byte
}

func newMatcher(pattern string, o GrepOptions) (*matcher, error) {
	if pattern == "" {
		return nil, fmt.Errorf("grep: empty pattern (expected text or a regular expression): %w", bs.ErrInvalid)
	}
	m := &matcher{}
	if !o.Regexp {
		m.raw = rawSafe(pattern)
		if !o.IgnoreCase {
			m.lit = []byte(pattern)
			return m, nil
		}
		if isASCII(pattern) {
			m.fold = lowerASCII(nil, []byte(pattern))
			return m, nil
		}
		pattern = regexp.QuoteMeta(pattern)
	}
	if o.IgnoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("grep: pattern %q: expected a regular expression (RE2 syntax): %v: %w", pattern, err, bs.ErrInvalid)
	}
	m.re = re
	if p, _ := re.LiteralPrefix(); p != "" && rawSafe(p) && o.Regexp {
		m.pre = []byte(p)
	}
	return m, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// lowerASCII appends b with ASCII letters lowered to dst.
func lowerASCII(dst, b []byte) []byte {
	dst = slices.Grow(dst[:0], len(b))[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// rawSafe reports whether text can appear in a decoded JSON string only as
// itself in the raw encoding, \u escapes aside: printable ASCII other than
// the characters JSON writers escape.
func rawSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '/' {
			return false
		}
	}
	return true
}

func (m *matcher) find(b []byte) (start, end int, ok bool) {
	if m.fold != nil {
		m.low = lowerASCII(m.low, b)
		i := bytes.Index(m.low, m.fold)
		if i < 0 {
			return 0, 0, false
		}
		return i, i + len(m.fold), true
	}
	if m.lit != nil {
		i := bytes.Index(b, m.lit)
		if i < 0 {
			return 0, 0, false
		}
		return i, i + len(m.lit), true
	}
	loc := m.re.FindIndex(b)
	if loc == nil {
		return 0, 0, false
	}
	return loc[0], loc[1], true
}

// mayHold reports whether a raw line may hold a match in one of its values.
func (m *matcher) mayHold(raw []byte) bool {
	if !m.raw && m.pre == nil || bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	if m.pre != nil {
		return bytes.Contains(raw, m.pre)
	}
	_, _, ok := m.find(raw)
	return ok
}

// Grep searches the transcript's every line (the active path, entries
// compacted away, entries off the active path) and, when side is not nil,
// every value extracted from the session, for pattern. It matches the
// decoded text of string values (member names and JSON syntax do not
// match); a malformed line is searched as raw text.
//
// Lines are read in file order, a chunk at a time, and only the lines that
// may hold the pattern are parsed: memory stays bounded whatever the
// transcript's size. Extracted values come after the lines, ordered by
// their entry's line. Each string value yields at most one hit (its first
// match); the search stops after MaxHits hits or when the caller stops
// iterating. An error (a bad pattern, a transcript that changed since it
// was read: brainsurgeon.ErrChanged) is yielded once and ends the
// sequence.
func Grep(ctx context.Context, tr bs.Transcript, side bs.SideStore, pattern string, o GrepOptions) iter.Seq2[Hit, error] {
	return func(yield func(Hit, error) bool) {
		m, err := newMatcher(pattern, o)
		if err != nil {
			yield(Hit{}, err)
			return
		}
		g := &grep{m: m, o: o, yield: yield, left: o.MaxHits, snip: o.SnippetChars}
		if g.left == 0 {
			g.left = DefaultMaxHits
		}
		if g.snip <= 0 {
			g.snip = DefaultSnippetChars
		}
		want := map[Where]bool{}
		for _, w := range o.In {
			switch w {
			case Active, Compacted, OffPath, Extracted:
				want[w] = true
			default:
				yield(Hit{}, fmt.Errorf("grep: place %q: expected active, compacted, off_path or extracted: %w", w, bs.ErrInvalid))
				return
			}
		}
		all := len(want) == 0
		p := locate(tr)
		nodes := tr.Nodes()
		lines := make([]int, 0, len(nodes))
		for i := range nodes {
			if nodes[i].Kind != bs.KindBlank && (all || want[p.where[i]]) {
				lines = append(lines, i+1)
			}
		}
		if len(lines) > 0 {
			for e, err := range tr.Lines(ctx, lines) {
				if err != nil {
					yield(Hit{}, err)
					return
				}
				if !m.mayHold(e.Raw) {
					continue
				}
				w := p.where[e.Line-1]
				if !g.line(e, w) {
					return
				}
			}
		}
		if side != nil && (all || want[Extracted]) {
			g.side(ctx, tr, side, p)
		}
	}
}

// grep is one search in progress.
type grep struct {
	m     *matcher
	o     GrepOptions
	yield func(Hit, error) bool
	left  int // hits still allowed; negative: no bound
	snip  int
	buf   []byte
}

// emit yields h and reports whether the search goes on.
func (g *grep) emit(h Hit) bool {
	if !g.yield(h, nil) {
		return false
	}
	if g.left > 0 {
		g.left--
		if g.left == 0 {
			return false
		}
	}
	return true
}

// line searches one transcript line; it reports whether the search goes on.
func (g *grep) line(raw *bs.Entry, w Where) bool {
	e := entry.Parse(raw.Raw, raw.Line, raw.Offset)
	base := Hit{EntryID: e.ID, Line: e.Line, Where: w, EntryWhere: w, Type: e.Type, Role: e.Role}
	if e.Kind == bs.KindMalformed {
		if s, end, ok := g.m.find(e.Raw); ok {
			h := base
			h.Offset, h.Snippet = s, snippet(e.Raw, s, end, g.snip)
			return g.emit(h)
		}
		return true
	}
	for _, v := range e.Strings {
		text, err := g.decode(e.Raw[v.Start:v.End])
		if err != nil {
			continue
		}
		if s, end, ok := g.m.find(text); ok {
			h := base
			h.Pointer, h.Offset, h.Snippet = v.Pointer, s, snippet(text, s, end, g.snip)
			if !g.emit(h) {
				return false
			}
		}
	}
	return true
}

// blocks searches the text blocks of a JSON array of content blocks; it
// reports whether the search goes on. A hit's pointer names the block's
// text ("<path>/<i>/text").
func (g *grep) blocks(raw []byte, base Hit, path string) bool {
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return true
	}
	for i, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			continue
		}
		text := []byte(*b.Text)
		if s, end, ok := g.m.find(text); ok {
			h := base
			h.Pointer, h.Offset, h.Snippet = path+"/"+strconv.Itoa(i)+"/text", s, snippet(text, s, end, g.snip)
			if !g.emit(h) {
				return false
			}
		}
	}
	return true
}

// decode returns the text of a raw JSON string; it may reuse g.buf.
func (g *grep) decode(raw []byte) ([]byte, error) {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	var err error
	g.buf, err = jsontext.AppendUnquote(g.buf[:0], raw)
	return g.buf, err
}

// side searches the extracted values of the session.
func (g *grep) side(ctx context.Context, tr bs.Transcript, side bs.SideStore, p *places) {
	ref := tr.Ref()
	infos, err := side.List(ctx, ref)
	if err != nil {
		g.yield(Hit{}, fmt.Errorf("grep extracted values of %s: %w", ref, err))
		return
	}
	type item struct {
		id   string
		line int
	}
	items := make([]item, 0, len(infos))
	var sourced map[string]int // tc- keys → the line of their tool result, read when needed
	for _, in := range infos {
		line := 0
		if n, ok := tr.Node(in.EntryID); ok {
			line = n.Line
		} else if extract.IsSourceKey(in.EntryID) {
			if sourced == nil {
				if sourced, err = sourceLines(ctx, tr); err != nil {
					g.yield(Hit{}, fmt.Errorf("grep extracted values of %s: %w", ref, err))
					return
				}
			}
			line = sourced[in.EntryID]
		}
		items = append(items, item{in.EntryID, line})
	}
	sort.SliceStable(items, func(a, b int) bool {
		if items[a].line != items[b].line {
			return items[a].line < items[b].line
		}
		return items[a].id < items[b].id
	})
	log := bs.LoggerOrDiscard(g.o.Logger)
	nodes := tr.Nodes()
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			g.yield(Hit{}, err)
			return
		}
		rec, err := extract.LoadRecord(ctx, side, ref, it.id)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				g.yield(Hit{}, err)
				return
			}
			log.Warn("grep: side record unreadable, skipped", "session", ref.String(), "entry", it.id, "err", err)
			continue
		}
		base := Hit{EntryID: it.id, Line: it.line, Where: Extracted}
		if it.line > 0 {
			n := &nodes[it.line-1]
			base.EntryWhere, base.Type, base.Role = p.where[it.line-1], n.Type, n.Role
		}
		for _, v := range rec.Values {
			if v.Block {
				continue // an image: base64 data, not text
			}
			raw, err := v.Bytes()
			if err != nil {
				log.Warn("grep: extracted value unreadable, skipped", "session", ref.String(), "entry", it.id, "path", v.Path, "err", err)
				continue
			}
			if len(raw) > 0 && raw[0] == '[' {
				// Content blocks (a tool result stored at the source):
				// each text block is searched as text.
				if !g.blocks(raw, base, v.Path) {
					return
				}
				continue
			}
			text := raw
			if len(raw) > 0 && raw[0] == '"' {
				if text, err = g.decode(raw); err != nil {
					continue
				}
			} else if json.Valid(raw) && len(raw) > 0 && raw[0] == '{' {
				continue // a whole block
			}
			if s, end, ok := g.m.find(text); ok {
				h := base
				h.Pointer, h.Offset, h.Snippet = v.Path, s, snippet(text, s, end, g.snip)
				if !g.emit(h) {
					return
				}
			}
		}
	}
}

// snippet returns at most n characters of text around [s, end), cut at
// character boundaries, with control characters shown as spaces and "…"
// where text was cut. Context is shared evenly before and after the match;
// what one side cannot use goes to the other.
func snippet(text []byte, s, end, n int) string {
	n = max(n, 1)
	// back and fwd step over k characters from an offset.
	back := func(at, k int) int {
		for ; k > 0 && at > 0; k-- {
			_, size := utf8.DecodeLastRune(text[:at])
			at -= size
		}
		return at
	}
	fwd := func(at, k int) int {
		for ; k > 0 && at < len(text); k-- {
			_, size := utf8.DecodeRune(text[at:])
			at += size
		}
		return at
	}
	var from, to int
	if m := utf8.RuneCount(text[s:end]); m >= n {
		from, to = s, fwd(s, n)
	} else {
		room := n - m
		from = back(s, room/2)
		to = fwd(end, room-utf8.RuneCount(text[from:s]))
		from = back(from, room-utf8.RuneCount(text[from:s])-utf8.RuneCount(text[end:to]))
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	for _, r := range string(text[from:to]) {
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// Report is the outcome of a bounded search, as the commands print it.
type Report struct {
	// Session names the transcript searched; Pattern and Regex are the
	// search.
	Session string `json:"session"`
	Pattern string `json:"pattern"`
	Regex   bool   `json:"regex"`
	// Hits are the hits found (when collected), Count how many.
	Hits  []Hit `json:"hits"`
	Count int   `json:"count"`
	// Truncated is true when there were more hits than the bound: the
	// search looks for one hit more than it keeps.
	Truncated bool `json:"truncated"`
}

// Search runs Grep for at most o.MaxHits hits (0 means DefaultMaxHits, a
// negative value no bound) and returns the report. Each hit is passed to each, when not
// nil, as soon as it is found; collect keeps them in Report.Hits too. A bad
// pattern gives an error wrapping brainsurgeon.ErrInvalid.
func Search(ctx context.Context, tr bs.Transcript, side bs.SideStore, pattern string, o GrepOptions, collect bool, each func(Hit)) (Report, error) {
	limit := o.MaxHits
	if limit == 0 {
		limit = DefaultMaxHits
	}
	if limit > 0 {
		o.MaxHits = limit + 1
	}
	r := Report{Session: tr.Ref().String(), Pattern: pattern, Regex: o.Regexp, Hits: []Hit{}}
	for h, err := range Grep(ctx, tr, side, pattern, o) {
		if err != nil {
			return r, err
		}
		if limit > 0 && r.Count == limit {
			r.Truncated = true
			break
		}
		r.Count++
		if collect {
			r.Hits = append(r.Hits, h)
		}
		if each != nil {
			each(h)
		}
	}
	return r, nil
}

// sourceLines returns the line of each tool result of tr that holds the
// placeholder of its source key ("tc-<toolCallId>": a result the plugin
// stored at the source, whose side record is keyed by its tool call, not
// by its entry id). The map is never nil.
func sourceLines(ctx context.Context, tr bs.Transcript) (map[string]int, error) {
	out := map[string]int{}
	nodes := tr.Nodes()
	var lines []int
	for i := range nodes {
		if nodes[i].Kind == bs.KindEntry && nodes[i].Role == "toolResult" {
			lines = append(lines, nodes[i].Line)
		}
	}
	if len(lines) == 0 {
		return out, nil
	}
	for raw, err := range tr.Lines(ctx, lines) {
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(raw.Raw, []byte(extract.PlaceholderPrefix+extract.SourceKeyPrefix)) {
			continue
		}
		e := entry.Parse(raw.Raw, raw.Line, raw.Offset)
		if e.Role == "" {
			e.Role = "toolResult"
		}
		if k := extract.SourceKeyOf(e); k != "" {
			out[k] = raw.Line
		}
	}
	return out, nil
}
