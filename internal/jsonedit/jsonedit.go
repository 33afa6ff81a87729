// Package jsonedit finds and edits members of raw JSON lines by splicing
// bytes, so that key order, spacing, number spelling and escapes stay as
// they were: it locates the byte span of a value at a JSON Pointer and
// builds [brainsurgeon.Splice]s that replace a value, insert a member before
// an object's closing brace or remove a member that was inserted so. Nothing
// is ever re-encoded: bytes outside a splice stay as they are, including key
// order, spacing, number spelling, escapes, invalid UTF-8 and duplicate
// names.
//
// Decoding is as lenient as entry.Parse (invalid UTF-8 and duplicate
// names allowed). When an object holds a name twice, the last occurrence
// counts, as in JavaScript's JSON.parse.
package jsonedit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
)

var decodeOptions = []jsontext.Options{
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

type decoder struct {
	r   bytes.Reader
	dec *jsontext.Decoder
}

var decoders = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = jsontext.NewDecoder(&d.r, decodeOptions...)
	return d
}}

func getDecoder(b []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.r.Reset(b)
	d.dec.Reset(&d.r, decodeOptions...)
	return d
}

func putDecoder(d *decoder) {
	d.r.Reset(nil)
	decoders.Put(d)
}

// SplitPointer splits an RFC 6901 JSON Pointer into its unescaped
// segments. "" is the whole document (no segments); any other pointer must
// start with "/".
func SplitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q does not start with \"/\": %w", p, bs.ErrInvalid)
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if strings.IndexByte(s, '~') < 0 {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(s); j++ {
			if s[j] != '~' {
				b.WriteByte(s[j])
				continue
			}
			if j+1 < len(s) && (s[j+1] == '0' || s[j+1] == '1') {
				if s[j+1] == '0' {
					b.WriteByte('~')
				} else {
					b.WriteByte('/')
				}
				j++
				continue
			}
			return nil, fmt.Errorf("JSON pointer %q: bad escape in segment %q: %w", p, s, bs.ErrInvalid)
		}
		segs[i] = b.String()
	}
	return segs, nil
}

// EscapeSegment escapes one pointer segment ("~" → "~0", "/" → "~1").
func EscapeSegment(s string) string {
	if strings.IndexAny(s, "~/") < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Join returns the pointer of the member or element seg of the value at
// pointer p.
func Join(p string, seg string) string { return p + "/" + EscapeSegment(seg) }

// root returns the span of the first JSON value in raw.
func root(raw []byte) (start, end int, ok bool) {
	d := getDecoder(raw)
	defer putDecoder(d)
	v, err := d.dec.ReadValue()
	if err != nil {
		return 0, 0, false
	}
	end = int(d.dec.InputOffset())
	return end - len(v), end, true
}

// nameEquals reports whether the raw (quoted) member name decodes to s.
func nameEquals(name []byte, s string) bool {
	if len(name) < 2 {
		return false
	}
	if bytes.IndexByte(name, '\\') < 0 {
		return string(name[1:len(name)-1]) == s
	}
	u, err := jsontext.AppendUnquote(nil, name)
	if err != nil {
		return false
	}
	return string(u) == s
}

// index parses an array index segment: digits without a leading zero.
func index(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(seg)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// child finds the member or element seg of the container value val (which
// starts at val[0]). It returns spans relative to val; nameStart is -1 for
// an array element.
func child(val []byte, seg string) (nameStart, start, end int, ok bool) {
	if len(val) == 0 || (val[0] != '{' && val[0] != '[') {
		return 0, 0, 0, false
	}
	d := getDecoder(val)
	defer putDecoder(d)
	dec := d.dec
	if _, err := dec.ReadToken(); err != nil {
		return 0, 0, 0, false
	}
	if val[0] == '{' {
		found := false
		for {
			switch dec.PeekKind() {
			case '}':
				return nameStart, start, end, found
			case 0:
				return 0, 0, 0, false
			}
			name, err := dec.ReadValue()
			if err != nil {
				return 0, 0, 0, false
			}
			ne := int(dec.InputOffset())
			// The name's bytes are only valid until the next read.
			match, ns := nameEquals(name, seg), ne-len(name)
			v, err := dec.ReadValue()
			if err != nil {
				return 0, 0, 0, false
			}
			ve := int(dec.InputOffset())
			if match {
				found, nameStart, start, end = true, ns, ve-len(v), ve
			}
		}
	}
	want, isIndex := index(seg)
	if !isIndex {
		return 0, 0, 0, false
	}
	for i := 0; ; i++ {
		switch dec.PeekKind() {
		case ']', 0:
			return 0, 0, 0, false
		}
		v, err := dec.ReadValue()
		if err != nil {
			return 0, 0, 0, false
		}
		if i == want {
			ve := int(dec.InputOffset())
			return -1, ve - len(v), ve, true
		}
	}
}

// Find returns the span [start, end) of the raw encoding of the value at
// pointer in raw (the first JSON value of raw). ok is false when the
// pointer is malformed, names nothing, or raw is not valid JSON along the
// way.
func Find(raw []byte, pointer string) (start, end int, ok bool) {
	segs, err := SplitPointer(pointer)
	if err != nil {
		return 0, 0, false
	}
	start, end, ok = root(raw)
	if !ok {
		return 0, 0, false
	}
	for _, seg := range segs {
		_, s, e, ok := child(raw[start:end], seg)
		if !ok {
			return 0, 0, false
		}
		start, end = start+s, start+e
	}
	return start, end, true
}

// Member finds the member name of the object at objPointer ("" for the
// top-level object). It returns the offset of the member name's opening
// quote and the span of its value. With duplicate names the last one is
// returned.
func Member(raw []byte, objPointer, name string) (nameStart, valueStart, valueEnd int, ok bool) {
	objStart, objEnd, ok := Find(raw, objPointer)
	if !ok || raw[objStart] != '{' {
		return 0, 0, 0, false
	}
	n, s, e, ok := child(raw[objStart:objEnd], name)
	if !ok {
		return 0, 0, 0, false
	}
	return objStart + n, objStart + s, objStart + e, true
}

// ObjectEnd returns the offset of the closing brace of the object at
// objPointer, and whether the object has no members.
func ObjectEnd(raw []byte, objPointer string) (closeBrace int, empty bool, ok bool) {
	objStart, objEnd, ok := Find(raw, objPointer)
	if !ok || raw[objStart] != '{' {
		return 0, false, false
	}
	// The value's last byte is its closing brace; it is empty when only
	// white space lies between the braces.
	return objEnd - 1, len(bytes.TrimSpace(raw[objStart+1:objEnd-1])) == 0, true
}

// ErrNoObject is wrapped by the splice builders when the pointer does not
// name an object of the line.
var ErrNoObject = fmt.Errorf("no object at pointer: %w", bs.ErrNotFound)

// ErrNoMember is wrapped when a member to replace or remove is absent.
var ErrNoMember = fmt.Errorf("no such member: %w", bs.ErrNotFound)

// ErrExists is wrapped by Insert when the member is already present.
var ErrExists = errors.New("member already present")

// EncodeName returns the JSON encoding of a member name (invalid UTF-8
// becomes U+FFFD).
func EncodeName(name string) []byte {
	b, err := jsontext.AppendQuote(nil, name)
	if err != nil {
		b, _ = jsontext.AppendQuote(nil, strings.ToValidUTF8(name, "\uFFFD"))
	}
	return b
}

// Insert returns the splice that adds the member name with the raw JSON
// value right before the closing brace of the object at objPointer:
// `,"name":value`, or `"name":value` into an empty object. It refuses a
// name that is already present (use Set).
func Insert(raw []byte, objPointer, name string, value []byte) (bs.Splice, error) {
	if !utf8.ValidString(name) {
		return bs.Splice{}, fmt.Errorf("insert %q: member name is not valid UTF-8: %w", name, bs.ErrInvalid)
	}
	brace, empty, ok := ObjectEnd(raw, objPointer)
	if !ok {
		return bs.Splice{}, fmt.Errorf("insert %q at %q: %w", name, objPointer, ErrNoObject)
	}
	if _, _, _, ok := Member(raw, objPointer, name); ok {
		return bs.Splice{}, fmt.Errorf("insert %q at %q: %w", name, objPointer, ErrExists)
	}
	return bs.Splice{Start: brace, End: brace, With: memberBytes(!empty, name, value)}, nil
}

func memberBytes(comma bool, name string, value []byte) []byte {
	n := EncodeName(name)
	b := make([]byte, 0, len(n)+len(value)+2)
	if comma {
		b = append(b, ',')
	}
	b = append(b, n...)
	b = append(b, ':')
	return append(b, value...)
}

// Set returns the splice that replaces the value of the member name of the
// object at objPointer with value, or inserts the member (see Insert) when
// it is absent.
func Set(raw []byte, objPointer, name string, value []byte) (bs.Splice, error) {
	if _, s, e, ok := Member(raw, objPointer, name); ok {
		return bs.Splice{Start: s, End: e, With: value}, nil
	}
	return Insert(raw, objPointer, name, value)
}

// Replace returns the splice that replaces the value at pointer.
func Replace(raw []byte, pointer string, value []byte) (bs.Splice, error) {
	s, e, ok := Find(raw, pointer)
	if !ok {
		return bs.Splice{}, fmt.Errorf("replace %q: %w", pointer, ErrNoMember)
	}
	return bs.Splice{Start: s, End: e, With: value}, nil
}

// Remove returns the splice that removes the member name of the object at
// objPointer together with one separating comma, so that removing a member
// added by Insert gives back the object's bytes as they were: the comma
// before the member (and its value) when there is one, else the member and
// the comma after it. White space before the comma is kept.
func Remove(raw []byte, objPointer, name string) (bs.Splice, error) {
	ns, _, ve, ok := Member(raw, objPointer, name)
	if !ok {
		return bs.Splice{}, fmt.Errorf("remove %q at %q: %w", name, objPointer, ErrNoMember)
	}
	i := ns - 1
	for i >= 0 && isSpace(raw[i]) {
		i--
	}
	if i >= 0 && raw[i] == ',' {
		return bs.Splice{Start: i, End: ve}, nil
	}
	// The first member: take the comma after it, and the white space
	// that follows the comma.
	j := ve
	for j < len(raw) && isSpace(raw[j]) {
		j++
	}
	if j < len(raw) && raw[j] == ',' {
		j++
		for j < len(raw) && isSpace(raw[j]) {
			j++
		}
		return bs.Splice{Start: ns, End: j}, nil
	}
	return bs.Splice{Start: ns, End: ve}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Apply returns raw with the splices applied. The splices must be sorted
// by Start and must not overlap; Apply panics otherwise, like a bad slice
// index would.
func Apply(raw []byte, splices ...bs.Splice) []byte {
	n := len(raw)
	for _, s := range splices {
		n += len(s.With) - (s.End - s.Start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, s := range splices {
		if s.Start < at || s.End < s.Start || s.End > len(raw) {
			panic(fmt.Sprintf("jsonedit: bad splice [%d,%d) after %d in %d bytes", s.Start, s.End, at, len(raw)))
		}
		out = append(out, raw[at:s.Start]...)
		out = append(out, s.With...)
		at = s.End
	}
	return append(out, raw[at:]...)
}

// Diff returns one splice that turns old into new: the bytes between their
// common prefix and common suffix. It is the empty splice {0,0,nil} when
// they are equal.
func Diff(old, new []byte) bs.Splice {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	if p == len(old) && p == len(new) {
		return bs.Splice{}
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	return bs.Splice{Start: p, End: len(old) - s, With: bytes.Clone(new[p : len(new)-s])}
}

// KindName names the kind of a JSON value for messages: "an object", "an
// array", "a string", "a number", "a boolean", "null", or "invalid JSON".
func KindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "invalid JSON"
}
