package summarize

// Package entry lists a line's strings with their JSON Pointers; the few
// values it does not list (a tool call's arguments, rendered whole, a
// message's booleans and exit code, and where the first object of a line
// holding two ends) are read here with jsontext.

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

// members calls fn with the name (unquoted) and the raw value of each
// member of the JSON object v, in order, until fn returns false. It returns
// false when v is not a well-formed object (members seen before the fault
// have been passed to fn). Raw values are slices of v.
func members(v []byte, fn func(name string, val []byte) bool) bool {
	if kindOf(v) != '{' {
		return false
	}
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(v)
	d.dec.Reset(&d.r, decodeOptions...)
	if _, err := d.dec.ReadToken(); err != nil {
		return false
	}
	for d.dec.PeekKind() != '}' {
		n, err := d.dec.ReadValue()
		if err != nil {
			return false
		}
		name := unquote(n)
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

// minified returns v without insignificant white space, as JSON.stringify
// would render it; v itself when it cannot be compacted.
func minified(v []byte) string {
	val := jsontext.Value(bytes.Clone(v))
	if err := val.Compact(); err != nil {
		return string(bytes.TrimSpace(v))
	}
	return string(val)
}

// firstObject returns the end of the JSON object that starts the line (after
// white space), or -1 when the line does not start with a well-formed one.
func firstObject(raw []byte) int {
	if kindOf(raw) != '{' {
		return -1
	}
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(raw)
	d.dec.Reset(&d.r, decodeOptions...)
	if _, err := d.dec.ReadValue(); err != nil {
		return -1
	}
	return int(d.dec.InputOffset())
}

// callArgs returns the raw "arguments" (or "input") value of a tool-call
// block. entry lists strings only, and a call's arguments are rendered
// whole, so they are read from the block.
func callArgs(block []byte) []byte {
	var args []byte
	members(block, func(name string, val []byte) bool {
		if name == "arguments" || name == "input" {
			args = val
		}
		return true
	})
	return args
}

// scalars are the members of a message that are not strings, which entry
// does not list.
type scalars struct {
	isError, excluded bool
	exitCode          int
	hasExit           bool
}

// messageScalars reads isError, excludeFromContext and exitCode (or else
// details.exitCode) of the line's "message" object, walking the line once.
func messageScalars(raw []byte) scalars {
	var sc scalars
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(raw)
	dec := d.dec
	dec.Reset(&d.r, decodeOptions...)
	if _, err := dec.ReadToken(); err != nil {
		return sc
	}
	for dec.PeekKind() == '"' {
		n, err := dec.ReadValue()
		if err != nil {
			return sc
		}
		if !nameIs(n, "message") || dec.PeekKind() != '{' {
			if dec.SkipValue() != nil {
				return sc
			}
			continue
		}
		sc = scalars{}
		var details []byte
		if _, err := dec.ReadToken(); err != nil {
			return sc
		}
		for dec.PeekKind() == '"' {
			n, err := dec.ReadValue()
			if err != nil {
				return sc
			}
			var val jsontext.Value
			switch {
			case nameIs(n, "isError"), nameIs(n, "exitCode"), nameIs(n, "excludeFromContext"), nameIs(n, "details"):
				if val, err = dec.ReadValue(); err != nil {
					return sc
				}
			default:
				if dec.SkipValue() != nil {
					return sc
				}
				continue
			}
			switch {
			case nameIs(n, "isError"):
				sc.isError = boolean(val)
			case nameIs(n, "excludeFromContext"):
				sc.excluded = boolean(val)
			case nameIs(n, "exitCode"):
				if f, ok := number(val); ok {
					sc.exitCode, sc.hasExit = int(f), true
				}
			default:
				details = val
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return sc
		}
		if !sc.hasExit {
			members(details, func(name string, val []byte) bool {
				if name == "exitCode" {
					if f, ok := number(val); ok {
						sc.exitCode, sc.hasExit = int(f), true
					}
					return false
				}
				return true
			})
		}
	}
	return sc
}

// nameIs reports whether the raw member name n is name; escaped names are
// unquoted first.
func nameIs(n []byte, name string) bool {
	if bytes.IndexByte(n, '\\') >= 0 {
		return unquote(n) == name
	}
	return len(n) == len(name)+2 && string(n[1:len(n)-1]) == name
}
