package summarize

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeOptions make the decoder as lenient as the host writes: lone
// UTF-16 surrogate escapes, invalid UTF-8 and duplicate names all occur in
// real lines. Nothing is re-encoded, so leniency costs nothing.
var decodeOptions = []jsontext.Options{
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

// decoder reads from a bytes.Buffer, which jsontext parses in place:
// the raw values it returns are slices of the input and stay valid.
type decoder struct {
	r   bytes.Buffer
	dec *jsontext.Decoder
}

var decoderPool = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = jsontext.NewDecoder(&d.r, decodeOptions...)
	return d
}}

// kindOf returns the JSON kind of a raw value by its first byte ('{', '[',
// '"', '0' for numbers, 't', 'f', 'n'), or 0 for nothing.
func kindOf(v []byte) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '{', '[', '"', 't', 'f', 'n':
		return c
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

// members calls fn with the raw name (unquoted) and the raw value of each
// member of the JSON object v, in order, until fn returns false. It returns
// false when v is not a well-formed object (members seen before the fault
// have been passed to fn).
func members(v []byte, fn func(name string, val []byte) bool) bool {
	return walk(v, '{', fn)
}

// elements calls fn with each raw element of the JSON array v, in order,
// until fn returns false. It returns false when v is not a well-formed
// array.
func elements(v []byte, fn func(val []byte) bool) bool {
	return walk(v, '[', func(_ string, val []byte) bool { return fn(val) })
}

// walk reads the container v of kind open ('{' or '['), passing each
// member's name (unquoted before the value is read: a raw value is valid
// only until the next read; "" in an array) and raw value to fn until it
// returns false; it returns false when v is not a well-formed container of
// that kind.
func walk(v []byte, open byte, fn func(name string, val []byte) bool) bool {
	if kindOf(v) != open {
		return false
	}
	closer := jsontext.Kind('}')
	if open == '[' {
		closer = ']'
	}
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(v)
	d.dec.Reset(&d.r, decodeOptions...)
	if _, err := d.dec.ReadToken(); err != nil {
		return false
	}
	for d.dec.PeekKind() != closer {
		var name string
		if open == '{' {
			n, err := d.dec.ReadValue()
			if err != nil {
				return false
			}
			name = unquote(n)
		}
		val, err := d.dec.ReadValue()
		if err != nil {
			return false
		}
		if !fn(name, val) {
			return true
		}
	}
	return true
}

// unquote returns the text of a raw JSON string, with invalid UTF-8 and
// lone surrogates replaced by U+FFFD, or "" when v is not a string.
func unquote(v []byte) string {
	if kindOf(v) != '"' {
		return ""
	}
	v = bytes.TrimSpace(v)
	if len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	bp := unquoteBuffers.Get().(*[]byte)
	b, _ := jsontext.AppendUnquote((*bp)[:0], v) // on error b holds the text with replacements
	s := string(b)
	if cap(b) <= 1<<20 {
		*bp = b
		unquoteBuffers.Put(bp)
	}
	return s
}

// unquoteBuffers hold the scratch space of unquote: the text is unescaped
// there and then copied once into its string.
var unquoteBuffers = sync.Pool{New: func() any { return new([]byte) }}

// str is unquote that also tells whether v was a string.
func str(v []byte) (string, bool) {
	if kindOf(v) != '"' {
		return "", false
	}
	return unquote(v), true
}

// number returns the value of a raw JSON number.
func number(v []byte) (float64, bool) {
	if kindOf(v) != '0' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	return f, err == nil
}

// boolean reports whether v is the JSON literal true.
func boolean(v []byte) bool {
	return string(bytes.TrimSpace(v)) == "true"
}

// stringList returns the strings of a raw JSON array, skipping other
// values.
func stringList(v []byte) []string {
	var out []string
	elements(v, func(e []byte) bool {
		if s, ok := str(e); ok && s != "" {
			out = append(out, s)
		}
		return true
	})
	return out
}

// compact returns v without insignificant white space, as JSON.stringify
// would render it; v itself when it cannot be compacted.
func compact(v []byte) string {
	val := jsontext.Value(bytes.Clone(v))
	if err := val.Compact(); err != nil {
		return string(bytes.TrimSpace(v))
	}
	return string(val)
}
