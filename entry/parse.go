// Package entry parses one transcript line (a JSON object of the pi /
// OpenClaw format, or the flat format whose entries carry "__id") into the root
// package's Entry view, without a round trip through maps: every string
// with its JSON Pointer and byte span, the content blocks, the envelope.
// Classify lists the values extraction may move out. The package knows
// nothing of where lines are stored; every backend and the policy
// packages share it.
package entry

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// decodeOptions make the decoder as lenient as the host: real lines carry
// lone UTF-16 surrogate escapes, invalid UTF-8 and, rarely, duplicate names.
// Leniency costs nothing because lines are never re-encoded.
var decodeOptions = []jsontext.Options{
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

// errGlued is the cause recorded for a line that holds two JSON values.
var errGlued = errors.New("two JSON values glued on one line (a missing newline)")

type frame struct {
	object bool
	// name is the raw (still quoted) member name of the current member when
	// object is true.
	name []byte
	// index is the current element index when object is false.
	index int
	// start is the offset of the container's first byte.
	start int
	// plainName tells whether name is its own JSON Pointer segment: no
	// escape, "~" or "/" (fast scanner only, with strings).
	plainName bool
	// pathLen is the length of the container's own JSON Pointer in the
	// fast scanner's path buffer (unused by the reference parser).
	pathLen int
}

type parser struct {
	noStrings bool
	dec       *jsontext.Decoder
	buf       bytes.Buffer
	frames    []frame
	ptr       []byte
}

var parserPool = sync.Pool{New: func() any {
	return &parser{dec: jsontext.NewDecoder(bytes.NewReader(nil), decodeOptions...)}
}}

// Parse builds the parsed view of one raw line. line and offset are
// recorded in the entry as given. The entry keeps a reference to raw; the
// caller must not modify it afterwards. A line that is not exactly one JSON
// object yields an entry of kind KindMalformed whose Err wraps
// brainsurgeon.ErrMalformed; Parse never fails otherwise. Entries and
// their Strings and Blocks are carved out of small blocks of memory shared
// by successive lines, so a retained entry may keep a few kilobytes of its
// neighbours' memory alive. Parse is safe for concurrent use.
func Parse(raw []byte, line int, offset int64) *bs.Entry {
	return parseEntry(raw, line, offset, true)
}

// ParseLite is Parse without the entry's Strings: the envelope (type, ids,
// time, role, custom type) and the content blocks only, which is what an
// index needs and costs much less on long lines.
func ParseLite(raw []byte, line int, offset int64) *bs.Entry {
	return parseEntry(raw, line, offset, false)
}

// parseEntry is Parse; withStrings false skips building Strings (the
// index of a transcript does not need them). The fast scanner reads the
// line; a line it does not accept (invalid, or outside what it handles) is
// read again by the reference parser, so errors and edge cases are the
// reference's.
func parseEntry(raw []byte, line int, offset int64, withStrings bool) *bs.Entry {
	if (len(raw) == 0 || raw[0] != '{') && len(bytes.TrimSpace(raw)) == 0 {
		return &bs.Entry{Line: line, Offset: offset, Raw: raw, Kind: bs.KindBlank}
	}
	if e := scanLine(raw, line, offset, withStrings); e != nil {
		if e.Type == "session" {
			e.Kind = bs.KindHeader
		}
		return e
	}
	return parseSlow(&bs.Entry{Line: line, Offset: offset, Raw: raw}, withStrings)
}

// parseReference is parseEntry with the reference parser only (tests and
// benchmarks compare the fast scanner with it).
func parseReference(raw []byte, line int, offset int64, withStrings bool) *bs.Entry {
	e := &bs.Entry{Line: line, Offset: offset, Raw: raw}
	if len(bytes.TrimSpace(raw)) == 0 {
		e.Kind = bs.KindBlank
		return e
	}
	return parseSlow(e, withStrings)
}

// parseSlow fills e (holding Line, Offset and Raw of a non-blank line) with
// the reference parser, which drives jsontext token by token.
func parseSlow(e *bs.Entry, withStrings bool) *bs.Entry {
	line, offset, raw := e.Line, e.Offset, e.Raw
	p := parserPool.Get().(*parser)
	defer parserPool.Put(p)
	p.noStrings = !withStrings
	if err := p.parse(e); err != nil {
		*e = bs.Entry{Line: line, Offset: offset, Raw: raw, Kind: bs.KindMalformed,
			Err: fmt.Errorf("%w: %v", bs.ErrMalformed, err)}
		return e
	}
	if e.Type == "session" {
		e.Kind = bs.KindHeader
	}
	return e
}

// rawString returns the unquoted contents of a raw JSON string, or nil
// when it cannot be unquoted.
func rawString(raw []byte) string {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return ""
	}
	return string(s)
}

func nameIs(raw []byte, name string) bool {
	return len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name
}

// pointer renders the JSON Pointer of the value at the top of the stack.
func (p *parser) pointer() string {
	b := p.ptr[:0]
	for i := range p.frames {
		b = appendSeg(b, &p.frames[i])
	}
	p.ptr = b
	return string(b)
}

// appendSeg appends "/" and the JSON Pointer segment of f's current member
// name (unquoted, "~" and "/" escaped) or element index.
func appendSeg(b []byte, f *frame) []byte {
	b = append(b, '/')
	if !f.object {
		return strconv.AppendInt(b, int64(f.index), 10)
	}
	n := f.name
	if bytes.IndexByte(n, '\\') >= 0 {
		if u, err := jsontext.AppendUnquote(nil, n); err == nil {
			n = append([]byte{'"'}, append(u, '"')...)
		}
	}
	n = n[1 : len(n)-1]
	for i, c := range n {
		if c == '~' || c == '/' {
			b = append(b, n[:i]...)
			for _, c := range n[i:] {
				switch c {
				case '~':
					b = append(b, '~', '0')
				case '/':
					b = append(b, '~', '1')
				default:
					b = append(b, c)
				}
			}
			return b
		}
	}
	return append(b, n...)
}

// where classifies the position of the value about to be read, relative to
// the few members the parsed view cares about.
type place uint8

const (
	placeOther place = iota
	placeTop
	placeMessage
	placeContentItem
)

func (p *parser) parse(e *bs.Entry) error {
	raw := e.Raw
	p.buf = *bytes.NewBuffer(raw)
	p.dec.Reset(&p.buf, decodeOptions...)
	p.frames = p.frames[:0]
	dec := p.dec

	if k := dec.PeekKind(); k != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return err
		}
		return fmt.Errorf("expected a JSON object, found %s", jsonedit.KindName(k))
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	p.frames = append(p.frames, frame{object: true, start: int(dec.InputOffset()) - 1})

	var (
		blockIdx   = -1
		blockStart int
		blockType  string
		tsSet      int // priority of the timestamp source that set Timestamp (lower wins)
		dunderID   bool
	)
	for len(p.frames) > 0 {
		top := &p.frames[len(p.frames)-1]
		kind := dec.PeekKind()
		if kind == 0 {
			_, err := dec.ReadToken()
			return err
		}
		if top.object && kind != '}' {
			// A member name.
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			top.name = name
			kind = dec.PeekKind()
			if kind == 0 {
				_, err := dec.ReadToken()
				return err
			}
		}
		switch kind {
		case '}', ']':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			end := int(dec.InputOffset())
			if kind == '}' && len(p.frames) == 3 && blockIdx >= 0 && isContentItem(p.frames, 2) {
				e.Blocks = append(e.Blocks, bs.Block{Index: blockIdx, Type: blockType, Start: blockStart, End: end})
				blockIdx = -1
			} else if kind == '}' && len(p.frames) == 4 && blockIdx >= 0 && isContentItem(p.frames, 3) {
				e.Blocks = append(e.Blocks, bs.Block{Index: blockIdx, Type: blockType, Start: blockStart, End: end})
				blockIdx = -1
			}
			p.frames = p.frames[:len(p.frames)-1]
			if n := len(p.frames); n > 0 && !p.frames[n-1].object {
				p.frames[n-1].index++
			}
			continue
		case '{', '[':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			start := int(dec.InputOffset()) - 1
			// A content block: /message/content/N or /content/N.
			if kind == '{' && (isContentArray(p.frames, 1) || isContentArray(p.frames, 2)) {
				blockIdx, blockStart, blockType = top.index, start, ""
			}
			p.frames = append(p.frames, frame{object: kind == '{', start: start})
			continue
		}
		// A scalar value.
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		end := int(dec.InputOffset())
		start := end - len(val)
		if kind == '"' && !p.noStrings {
			e.Strings = append(e.Strings, bs.Value{Pointer: p.pointer(), Start: start, End: end})
		}
		depth := len(p.frames)
		switch {
		case depth == 1:
			n := top.name
			switch {
			case nameIs(n, "type") && kind == '"':
				e.Type = rawString(val)
			case nameIs(n, "__id") && kind == '"':
				e.ID = rawString(val)
				dunderID = true
			case nameIs(n, "id") && kind == '"':
				if !dunderID {
					e.ID = rawString(val)
				}
			case nameIs(n, "parentId") && kind == '"':
				e.ParentID = rawString(val)
			case nameIs(n, "role") && kind == '"':
				if e.Role == "" {
					e.Role = rawString(val)
				}
			case nameIs(n, "customType") && kind == '"':
				e.CustomType = rawString(val)
			case nameIs(n, "_extractable"):
				e.Extractable = val
			case nameIs(n, "appendMode") && kind == '"':
				e.AppendMode = rawString(val)
			case nameIs(n, "_restored") && kind == '"':
				e.Restored, _ = parseTime(val, kind)
			case nameIs(n, "timestamp"):
				setTime(e, &tsSet, 1, val, kind)
			case nameIs(n, "__ts"):
				setTime(e, &tsSet, 2, val, kind)
			case nameIs(n, "time"):
				setTime(e, &tsSet, 4, val, kind)
			}
		case depth == 2 && isMember(p.frames, 0, "message"):
			n := top.name
			switch {
			case nameIs(n, "role") && kind == '"':
				e.Role = rawString(val)
			case nameIs(n, "created_at"):
				setTime(e, &tsSet, 3, val, kind)
			}
		case blockIdx >= 0 && kind == '"' && nameIs(top.name, "type") && (depth == 3 && isContentItem(p.frames, 2) || depth == 4 && isContentItem(p.frames, 3)):
			blockType = rawString(val)
		}
		if !top.object {
			top.index++
		}
	}
	// Anything after the first value other than white space is a second
	// value glued to the first.
	if len(bytes.TrimSpace(remaining(dec, raw))) > 0 {
		return errGlued
	}
	return nil
}

// remaining returns the bytes after the decoder's input offset.
func remaining(dec *jsontext.Decoder, raw []byte) []byte {
	off := int(dec.InputOffset())
	if off >= len(raw) {
		return nil
	}
	return raw[off:]
}

// isMember reports whether frame i is an object currently in member name.
func isMember(frames []frame, i int, name string) bool {
	return i < len(frames) && frames[i].object && nameIs(frames[i].name, name)
}

// isContentArray reports whether the frame at depth d (0 = top object) is
// the "content" array of /message/content (d == 2) or /content (d == 1),
// and the current container is that array.
func isContentArray(frames []frame, d int) bool {
	if len(frames) != d+1 || frames[d].object {
		return false
	}
	switch d {
	case 1:
		return isMember(frames, 0, "content")
	case 2:
		return isMember(frames, 0, "message") && isMember(frames, 1, "content")
	}
	return false
}

// isContentItem reports whether the frames up to depth d describe
// .../content/N with the array at depth d-1.
func isContentItem(frames []frame, d int) bool {
	if len(frames) != d+1 || !frames[d].object || frames[d-1].object {
		return false
	}
	switch d {
	case 2:
		return isMember(frames, 0, "content")
	case 3:
		return isMember(frames, 0, "message") && isMember(frames, 1, "content")
	}
	return false
}

func setTime(e *bs.Entry, set *int, prio int, val []byte, kind jsontext.Kind) {
	if *set != 0 && *set <= prio {
		return
	}
	if t, ok := parseTime(val, kind); ok {
		e.Timestamp = t
		*set = prio
	}
}

// parseTime reads an ISO 8601 string or a number of epoch milliseconds.
func parseTime(val []byte, kind jsontext.Kind) (time.Time, bool) {
	switch kind {
	case '"':
		return parseTimeString(rawString(val))
	case '0':
		return parseTimeNumber(val)
	}
	return time.Time{}, false
}

// parseTimeString reads the unquoted contents of a JSON string as an ISO
// 8601 time or a number of epoch milliseconds. s is not retained.
func parseTimeString(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	if ms, err := strconv.ParseFloat(s, 64); err == nil && ms > 0 {
		return time.UnixMilli(int64(ms)).UTC(), true
	}
	return time.Time{}, false
}

// parseTimeNumber reads a JSON number of epoch milliseconds (or seconds,
// below 1e11).
func parseTimeNumber(val []byte) (time.Time, bool) {
	ms, err := strconv.ParseFloat(string(val), 64)
	if err == nil && ms > 0 {
		// Values below 1e11 are seconds, not milliseconds.
		if ms < 1e11 {
			return time.Unix(int64(ms), 0).UTC(), true
		}
		return time.UnixMilli(int64(ms)).UTC(), true
	}
	return time.Time{}, false
}
