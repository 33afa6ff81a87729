package extract

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// PlaceholderPrefix starts every placeholder.
const PlaceholderPrefix = "[[extracted-"

// Placeholder returns the placeholder for an entry: "[[extracted-<id>]]".
func Placeholder(id string) string { return PlaceholderPrefix + id + "]]" }

// PlaceholderText returns the text that replaces a string value: the bare
// placeholder, or with previewChars > 0 the first previewChars characters
// (whole code points) of value followed by "… " and the placeholder.
func PlaceholderText(value string, previewChars int, id string) string {
	if previewChars <= 0 {
		return Placeholder(id)
	}
	n, i := 0, 0
	for i < len(value) && n < previewChars {
		_, size := utf8.DecodeRuneInString(value[i:])
		i += size
		n++
	}
	return value[:i] + "… " + Placeholder(id)
}

// encodeString returns the JSON encoding of s. Invalid UTF-8 in s (which
// only a preview of an invalid value could carry) is replaced, which is
// harmless: the original bytes live in the side store.
func encodeString(s string) []byte {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		b, _ = jsontext.AppendQuote(nil, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return b
}

// ImageBlock returns the text block that replaces an extracted image block.
func ImageBlock(id string) []byte {
	return []byte(`{"type":"text","text":` + string(encodeString(Placeholder(id))) + `}`)
}

// IsPlaceholderValue reports whether a raw JSON value (a string, or a text
// block standing in for an image) holds the entry's placeholder. Text that
// merely mentions another entry's placeholder does not count.
func IsPlaceholderValue(raw []byte, id string) bool {
	return id != "" && bytes.Contains(raw, []byte(Placeholder(id)))
}

// decodeString returns the decoded value of a raw JSON string; ok is false
// when raw is not one.
func decodeString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Replacement returns the bytes an extraction pass splices in place of
// candidate c of the entry whose id is id and whose raw line is raw: the
// JSON string of the placeholder (with the preview of previewChars
// characters in front when previewChars > 0), or for an image block the
// text block of ImageBlock. A view that shows a value as extracted
// without writing the transcript splices the same bytes, so that the
// value has one placeholder whichever did it.
func Replacement(raw []byte, c bs.Candidate, id string, previewChars int) []byte {
	return replacement(raw, c, id, previewChars)
}

// replacement returns the bytes that replace candidate c of the entry with
// the given raw line.
func replacement(raw []byte, c bs.Candidate, id string, previewChars int) []byte {
	if c.Block {
		return ImageBlock(id)
	}
	if previewChars > 0 {
		if s, ok := decodeString(raw[c.Start:c.End]); ok {
			return encodeString(PlaceholderText(s, previewChars, id))
		}
	}
	return encodeString(Placeholder(id))
}
