package entry

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync"
	"time"
	"unsafe"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// The fast scanner reads a line in one pass over its bytes and builds the
// same entry as the reference parser (parseSlow). It accepts only lines the
// reference accepts: whenever it meets anything invalid, or anything it
// does not handle (deep nesting), it gives up and parseEntry asks the
// reference, so error texts and edge cases stay the reference's.

// maxScanDepth is the deepest nesting the fast scanner handles; deeper
// lines go to the reference parser (whose limit is jsontext's 10,000).
const maxScanDepth = 256

// strRef is a string of the entry under construction: either s itself, or
// the bytes lo:hi of the line's string buffer (turned into one string once
// the line is read).
type strRef struct {
	s      string
	lo, hi int32
}

func (r strRef) empty() bool { return r.s == "" && r.lo == r.hi }

func (r strRef) get(line string) string {
	if r.lo == r.hi {
		return r.s
	}
	return line[r.lo:r.hi]
}

// valRef is a string value: its pointer in the string buffer and its span
// in the line.
type valRef struct {
	plo, phi   int32
	start, end int
}

// blockRef is a content block under construction.
type blockRef struct {
	index      int
	typ        strRef
	start, end int
}

type scanner struct {
	frames []frame
	// path is the JSON Pointer of the innermost container (with strings
	// only); each frame records its own length in pathLen.
	path []byte
	// buf collects the line's pointers and envelope strings; it becomes one
	// string per line.
	buf    []byte
	vals   []valRef
	blocks []blockRef

	typ, id, parentID, role, customType, appendMode strRef

	// The slabs (see entrySlab).
	entries   []bs.Entry
	valueSlab []bs.Value
	blockSlab []bs.Block
	textSlab  []byte
	ptrSlab   []byte
	// pbuf collects the line's JSON Pointers (with strings only).
	pbuf []byte
}

var scannerPool = sync.Pool{New: func() any { return new(scanner) }}

// intern returns the envelope and block values that recur on every line
// as shared strings instead of copies.
func intern(b []byte) (string, bool) {
	switch string(b) {
	case "message":
		return "message", true
	case "custom_message":
		return "custom_message", true
	case "custom":
		return "custom", true
	case "compaction":
		return "compaction", true
	case "model_change":
		return "model_change", true
	case "thinking_level_change":
		return "thinking_level_change", true
	case "session":
		return "session", true
	case "user":
		return "user", true
	case "assistant":
		return "assistant", true
	case "toolResult":
		return "toolResult", true
	case "system":
		return "system", true
	case "bashExecution":
		return "bashExecution", true
	case "text":
		return "text", true
	case "thinking":
		return "thinking", true
	case "toolCall":
		return "toolCall", true
	case "image":
		return "image", true
	case "tool_result":
		return "tool_result", true
	case "side":
		return "side", true
	}
	return "", false
}

// str returns the unquoted contents of the raw JSON string val as rawString
// does; esc tells whether val holds a backslash.
func (s *scanner) str(val []byte, esc bool) strRef {
	if esc {
		return strRef{s: rawString(val)}
	}
	body := val[1 : len(val)-1]
	if v, ok := intern(body); ok {
		return strRef{s: v}
	}
	lo := len(s.buf)
	s.buf = append(s.buf, body...)
	return strRef{lo: int32(lo), hi: int32(len(s.buf))}
}

// Entries, values and blocks are carved out of small slabs shared by
// successive lines (one allocation per slab instead of one per line); a
// slot handed out is never written again. Lines needing more than a quarter
// of a slab get their own allocation.
const (
	entrySlab = 32
	valueSlab = 256
	blockSlab = 64
	textSlab  = 4096
)

// scanLine reads a non-blank line with the fast scanner. It returns nil
// when the reference parser must read the line instead.
func scanLine(raw []byte, line int, offset int64, withStrings bool) *bs.Entry {
	if len(raw) > 1<<31-1 {
		return nil
	}
	s := scannerPool.Get().(*scanner)
	// The entry is built in the next free slot of the entry slab, which is
	// handed out only if the scan succeeds (and cleared otherwise).
	if len(s.entries) == cap(s.entries) {
		s.entries = make([]bs.Entry, 0, entrySlab)
	}
	e := &s.entries[:len(s.entries)+1][len(s.entries)]
	e.Line, e.Offset, e.Raw = line, offset, raw
	if s.scan(e, withStrings) {
		s.entries = s.entries[:len(s.entries)+1]
		s.finish(e, withStrings)
	} else {
		*e = bs.Entry{}
		e = nil
	}
	clear(s.frames[:cap(s.frames)]) // the names point into raw
	s.frames = s.frames[:0]
	s.path = s.path[:0]
	s.buf = s.buf[:0]
	s.pbuf = s.pbuf[:0]
	s.vals = s.vals[:0]
	s.blocks = s.blocks[:0]
	s.typ, s.id, s.parentID, s.role, s.customType, s.appendMode = strRef{}, strRef{}, strRef{}, strRef{}, strRef{}, strRef{}
	if cap(s.buf) <= 1<<20 && cap(s.pbuf) <= 1<<20 && cap(s.vals) <= 1<<16 {
		scannerPool.Put(s)
	}
	return e
}

// text returns the line's envelope strings (ids, types) as one string,
// and pointers its JSON Pointers as another. Small ones are copied into
// slabs whose bytes are never written again once handed out (a slab is
// only appended to, then replaced when full), so the strings may point
// into them. Envelope strings and pointers have slabs of their own: an
// index keeps the ids of every line, and ids sharing a slab with the
// pointers (which nobody keeps) held three times their size alive.
func (s *scanner) text() string { return slabString(&s.textSlab, s.buf) }

func (s *scanner) pointers() string { return slabString(&s.ptrSlab, s.pbuf) }

func slabString(slab *[]byte, b []byte) string {
	n := len(b)
	if n == 0 {
		return ""
	}
	if n > textSlab/4 {
		return string(b)
	}
	if cap(*slab)-len(*slab) < n {
		*slab = make([]byte, 0, textSlab)
	}
	lo := len(*slab)
	*slab = append(*slab, b...)
	return unsafe.String(&(*slab)[lo], n)
}

// values returns n zero values from the value slab.
func (s *scanner) values(n int) []bs.Value { return carve(&s.valueSlab, n, valueSlab) }

// newBlocks returns n zero blocks from the block slab.
func (s *scanner) newBlocks(n int) []bs.Block { return carve(&s.blockSlab, n, blockSlab) }

// carve returns n zero elements from a slab of size elements, starting a
// new slab when this one is full; more than a quarter of a slab gets an
// allocation of its own.
func carve[T any](slab *[]T, n, size int) []T {
	if n > size/4 {
		return make([]T, n)
	}
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, size)
	}
	l := len(*slab)
	*slab = (*slab)[:l+n]
	return (*slab)[l : l+n : l+n]
}

// finish moves what scan collected into e: one string for every pointer
// and copied envelope value of the line.
func (s *scanner) finish(e *bs.Entry, withStrings bool) {
	line := s.text()
	e.Type = s.typ.get(line)
	e.ID = s.id.get(line)
	e.ParentID = s.parentID.get(line)
	e.Role = s.role.get(line)
	e.CustomType = s.customType.get(line)
	e.AppendMode = s.appendMode.get(line)
	if len(s.blocks) > 0 {
		e.Blocks = s.newBlocks(len(s.blocks))
		for i, b := range s.blocks {
			e.Blocks[i] = bs.Block{Index: b.index, Type: b.typ.get(line), Start: b.start, End: b.end}
		}
	}
	if withStrings && len(s.vals) > 0 {
		ptrs := s.pointers()
		e.Strings = s.values(len(s.vals))
		for i, v := range s.vals {
			e.Strings[i] = bs.Value{Pointer: ptrs[v.plo:v.phi], Start: v.start, End: v.end}
		}
	}
}

// plainSeg reports whether the member name n needs no "~" or "/" escape in
// a JSON Pointer.
func plainSeg(n []byte) bool {
	for _, c := range n {
		if c == '~' || c == '/' {
			return false
		}
	}
	return true
}

// appendSegFast is appendSeg with a short way for plain member names
// (nearly all of them) and small indexes.
func appendSegFast(b []byte, f *frame) []byte {
	switch {
	case f.object && f.plainName:
		b = append(b, '/')
		return append(b, f.name[1:len(f.name)-1]...)
	case !f.object && f.index < 10:
		return append(b, '/', byte('0'+f.index))
	}
	return appendSeg(b, f)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scan reads e.Raw into e and the scanner; false means the reference
// parser must read the line (see scanLine).
func (s *scanner) scan(e *bs.Entry, withStrings bool) bool {
	raw := e.Raw
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	s.frames = append(s.frames, frame{object: true, start: i})
	i++
	var (
		blockIdx   = -1
		blockStart int
		blockType  strRef
		tsSet      int
		dunderID   bool
		first      = true
	)
	for {
		top := &s.frames[len(s.frames)-1]
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return false
		}
		c := raw[i]
		if first && (c == '}' && top.object || c == ']' && !top.object) {
			// An empty container: closed below.
		} else {
			if top.object {
				if c != '"' {
					return false
				}
				j, esc, ok := scanString(raw, i)
				if !ok {
					return false
				}
				top.name = raw[i:j]
				if withStrings {
					top.plainName = !esc && plainSeg(raw[i+1:j-1])
				}
				i = skipSpace(raw, j)
				if i >= len(raw) || raw[i] != ':' {
					return false
				}
				i = skipSpace(raw, i+1)
				if i >= len(raw) {
					return false
				}
				c = raw[i]
			}
			var (
				j   int
				esc bool
			)
			switch c {
			case '{', '[':
				if len(s.frames) >= maxScanDepth {
					return false
				}
				if c == '{' && (isContentArray(s.frames, 1) || isContentArray(s.frames, 2)) {
					blockIdx, blockStart, blockType = top.index, i, strRef{}
				}
				if withStrings {
					s.path = appendSegFast(s.path, top)
				}
				s.frames = append(s.frames, frame{object: c == '{', start: i, pathLen: len(s.path)})
				i++
				first = true
				continue
			case '"':
				var ok bool
				if j, esc, ok = scanString(raw, i); !ok {
					return false
				}
			case 't':
				if j = i + 4; j > len(raw) || string(raw[i:j]) != "true" {
					return false
				}
			case 'f':
				if j = i + 5; j > len(raw) || string(raw[i:j]) != "false" {
					return false
				}
			case 'n':
				if j = i + 4; j > len(raw) || string(raw[i:j]) != "null" {
					return false
				}
			default:
				if j = scanNumber(raw, i); j < 0 {
					return false
				}
				c = '0'
			}
			// A scalar value raw[i:j] of kind c.
			val := raw[i:j]
			if c == '"' && withStrings {
				lo := len(s.pbuf)
				s.pbuf = append(s.pbuf, s.path...)
				s.pbuf = appendSegFast(s.pbuf, top)
				if len(s.pbuf) > 1<<31-1 {
					return false
				}
				s.vals = append(s.vals, valRef{plo: int32(lo), phi: int32(len(s.pbuf)), start: i, end: j})
			}
			switch depth := len(s.frames); {
			case depth == 1:
				n := top.name
				switch string(n[1 : len(n)-1]) {
				case "type":
					if c == '"' {
						s.typ = s.str(val, esc)
					}
				case "__id":
					if c == '"' {
						s.id = s.str(val, esc)
						dunderID = true
					}
				case "id":
					if c == '"' && !dunderID {
						s.id = s.str(val, esc)
					}
				case "parentId":
					if c == '"' {
						s.parentID = s.str(val, esc)
					}
				case "role":
					if c == '"' && s.role.empty() {
						s.role = s.str(val, esc)
					}
				case "customType":
					if c == '"' {
						s.customType = s.str(val, esc)
					}
				case "_extractable":
					e.Extractable = val
				case "appendMode":
					if c == '"' {
						s.appendMode = s.str(val, esc)
					}
				case "_restored":
					if c == '"' {
						e.Restored, _ = scanTime(val, c, esc)
					}
				case "timestamp":
					scanSetTime(e, &tsSet, 1, val, c, esc)
				case "__ts":
					scanSetTime(e, &tsSet, 2, val, c, esc)
				case "time":
					scanSetTime(e, &tsSet, 4, val, c, esc)
				}
			case depth == 2 && isMember(s.frames, 0, "message"):
				switch {
				case nameIs(top.name, "role") && c == '"':
					s.role = s.str(val, esc)
				case nameIs(top.name, "created_at"):
					scanSetTime(e, &tsSet, 3, val, c, esc)
				}
			case blockIdx >= 0 && c == '"' && nameIs(top.name, "type") && (depth == 3 && isContentItem(s.frames, 2) || depth == 4 && isContentItem(s.frames, 3)):
				blockType = s.str(val, esc)
			}
			if !top.object {
				top.index++
			}
			i = j
			i = skipSpace(raw, i)
			if i >= len(raw) {
				return false
			}
			c = raw[i]
		}
		first = false
		// After a value: a comma, or the end of one or more containers.
		for {
			if c == ',' {
				i++
				break
			}
			top = &s.frames[len(s.frames)-1]
			if !(c == '}' && top.object || c == ']' && !top.object) {
				return false
			}
			i++
			if c == '}' && blockIdx >= 0 && (len(s.frames) == 3 && isContentItem(s.frames, 2) || len(s.frames) == 4 && isContentItem(s.frames, 3)) {
				s.blocks = append(s.blocks, blockRef{index: blockIdx, typ: blockType, start: blockStart, end: i})
				blockIdx = -1
			}
			s.frames = s.frames[:len(s.frames)-1]
			if len(s.frames) == 0 {
				// Anything after the object other than white space is a
				// second value glued to it.
				return len(bytes.TrimSpace(raw[i:])) == 0
			}
			parent := &s.frames[len(s.frames)-1]
			if !parent.object {
				parent.index++
			}
			if withStrings {
				s.path = s.path[:parent.pathLen]
			}
			i = skipSpace(raw, i)
			if i >= len(raw) {
				return false
			}
			c = raw[i]
		}
	}
}

// scanNumber returns the end of the JSON number (RFC 8259) at b[i:], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i++
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = skipDigits(b, i+1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = skipDigits(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// skipDigits returns the index after the run of digits starting at i, or
// -1 when there is none.
func skipDigits(b []byte, i int) int {
	d := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	if i == d {
		return -1
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stop flags the bytes of the little-endian word x that end a run of plain
// string bytes: a quote, a backslash or a control byte (< 0x20). The lowest
// flagged byte is exact; bytes above it may be flagged wrongly (borrows
// only run upwards). x^0x02 maps the quote to 0x20 and keeps control bytes
// below it, so one test finds both.
func stop(x uint64) uint64 {
	q := x ^ (lsb * 0x02)
	y := x ^ (lsb * '\\')
	return ((q-lsb*0x21)&^q | (y-lsb)&^y) & msb
}

// scanString returns the end of the JSON string starting with the quote at
// b[i] and whether it holds escapes; ok is false when the string is not
// valid for jsontext with AllowInvalidUTF8 (bad escape, raw control byte,
// no closing quote). Bytes >= 0x80 are not checked: invalid UTF-8 and lone
// surrogate escapes are accepted as the reference accepts them.
//
// It tests 32 bytes per iteration, eight at a time (see stop).
func scanString(b []byte, i int) (end int, esc, ok bool) {
	i++
	// Most strings are short (names, ids, types): one word first.
	if i+8 <= len(b) {
		if m := stop(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			if b[i] == '"' {
				return i + 1, false, true
			}
		} else {
			i += 8
		}
	}
	for {
		for ; i+32 <= len(b); i += 32 {
			w := b[i : i+32 : i+32]
			m0 := stop(binary.LittleEndian.Uint64(w[0:]))
			m1 := stop(binary.LittleEndian.Uint64(w[8:]))
			m2 := stop(binary.LittleEndian.Uint64(w[16:]))
			m3 := stop(binary.LittleEndian.Uint64(w[24:]))
			if m0|m1|m2|m3 != 0 {
				switch {
				case m0 != 0:
					i += bits.TrailingZeros64(m0) / 8
				case m1 != 0:
					i += 8 + bits.TrailingZeros64(m1)/8
				case m2 != 0:
					i += 16 + bits.TrailingZeros64(m2)/8
				default:
					i += 24 + bits.TrailingZeros64(m3)/8
				}
				goto special
			}
		}
		for ; i+16 <= len(b); i += 16 {
			if m := stop(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto special
			}
			if m := stop(binary.LittleEndian.Uint64(b[i+8:])); m != 0 {
				i += 8 + bits.TrailingZeros64(m)/8
				goto special
			}
		}
		if i+8 <= len(b) {
			if m := stop(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto special
			}
			i += 8
		}
		for ; i < len(b); i++ {
			if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
				goto special
			}
		}
		return 0, false, false
	special:
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
		default:
			return 0, false, false
		}
		if i+1 >= len(b) {
			return 0, false, false
		}
		esc = true
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return 0, false, false
			}
			i += 6
		default:
			return 0, false, false
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanTime is parseTime for the fast scanner: a string without escapes is
// read in place, without a copy.
func scanTime(val []byte, kind byte, esc bool) (time.Time, bool) {
	switch kind {
	case '"':
		if esc {
			return parseTimeString(rawString(val))
		}
		body := val[1 : len(val)-1]
		if t, ok := parseMillisUTC(body); ok {
			return t, true
		}
		if len(body) == 0 {
			return parseTimeString("")
		}
		// parseTimeString does not retain its argument, so a view of the
		// line's bytes is safe for the call.
		return parseTimeString(unsafe.String(&body[0], len(body)))
	case '0':
		return parseTimeNumber(val)
	}
	return time.Time{}, false
}

// scanSetTime is setTime for the fast scanner.
func scanSetTime(e *bs.Entry, set *int, prio int, val []byte, kind byte, esc bool) {
	if *set != 0 && *set <= prio {
		return
	}
	if t, ok := scanTime(val, kind, esc); ok {
		e.Timestamp = t
		*set = prio
	}
}

// parseMillisUTC reads the form the hosts write, "2026-03-01T09:00:00.000Z",
// as time.Parse with time.RFC3339Nano would, followed by UTC. ok false
// means the caller must use parseTimeString (another form, or a field out
// of range).
func parseMillisUTC(b []byte) (t time.Time, ok bool) {
	if len(b) != 24 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	num := func(lo, hi int) int {
		n := 0
		for _, c := range b[lo:hi] {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, ms := num(11, 13), num(14, 16), num(17, 19), num(20, 23)
	if year < 1000 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 ||
		minute < 0 || minute > 59 || sec < 0 || sec > 59 || ms < 0 {
		return time.Time{}, false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		days = 29
	}
	if day > days {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, time.UTC).UTC(), true
}
