package agenttext

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// The placeholder of a tool result stored at the source (the OpenClaw
// plugin's offload) is built by the daemon and handed to the host as JSON:
// its text must be exactly what the plugin's JavaScript used to build, so it
// is written as the body of a JSON string literal, escaped as JavaScript's
// JSON.stringify escapes, and its preview is cut from the literals of the
// result's text blocks (which may hold lone surrogate escapes a Go string
// cannot).

// SourceUnknownSession is how the CLI hint of a source placeholder names a
// session the host did not name.
const SourceUnknownSession = "<session>"

// SourcePlaceholder is what the text of a source placeholder says.
type SourcePlaceholder struct {
	// Key is the side key, "tc-<tool call id>".
	Key string
	// Tool is the tool's label (the tool a Tool Search tool_call ran,
	// else the tool's name).
	Tool string
	// Session names the session for `brainsurgeon restore`; "" or
	// SourceUnknownSession writes SourceUnknownSession unquoted.
	Session string
	// Chars is the length of the result's text blocks in characters
	// (code points; a lone surrogate is one) and Images its image blocks.
	Chars, Images int
	// Preview is how many characters the head and the tail each hold; 0
	// writes no preview. Head and Tail are their JSON string literal
	// bodies, escaped as AppendJSString escapes.
	Preview    int
	Head, Tail []byte
}

// AppendBody appends the placeholder's text, as the body of a JSON string
// literal (without its quotes, escaped as JSON.stringify escapes), to dst:
// the placeholder and what was stored, how to restore it with purge_control
// and with the CLI, then the first and last Preview characters when Preview
// is above 0, one per line.
func (p SourcePlaceholder) AppendBody(dst []byte) []byte {
	size := strconv.Itoa(p.Chars) + " characters"
	if p.Images > 0 {
		size += " and " + plural.Count(p.Images, "image", "images")
	}
	session := SourceUnknownSession
	if p.Session != "" && p.Session != SourceUnknownSession {
		session = ShellArg(p.Session)
	}
	lines := []string{
		"[[extracted-" + p.Key + "]] BrainSurgeon stored this " + p.Tool + " result (" + size + ") outside the transcript.",
		`Restore it exactly with purge_control {"action":"restore","value_id":"` + p.Key + `"} (a long result comes in pages: follow each page's Next:).`,
		"Without the plugin: brainsurgeon restore " + session + " " + ShellArg(p.Key) + " prints it and writes it back here.",
	}
	for i, l := range lines {
		if i > 0 {
			dst = append(dst, `\n`...)
		}
		dst = AppendJSString(dst, l)
	}
	if p.Preview > 0 {
		n := strconv.Itoa(p.Preview)
		dst = AppendJSString(append(dst, `\n`...), "--- first "+n+" characters ---")
		dst = append(append(dst, `\n`...), p.Head...)
		dst = AppendJSString(append(dst, `\n`...), "--- last "+n+" characters ---")
		dst = append(append(dst, `\n`...), p.Tail...)
	}
	return dst
}

// shellSafe matches the words a POSIX shell takes as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// ShellArg quotes s for a POSIX shell when it holds anything but the
// characters that need no quoting (letters, digits and _./:@%+=,-): in
// single quotes, each ' written as '\”.
func ShellArg(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// AppendJSString appends s (UTF-8) to dst as the body of a JSON string
// literal, escaped as JavaScript's JSON.stringify escapes: \b \t \n \f \r
// \" \\, other control characters as \u00xx (lower-case hex), everything
// else as it is (no HTML escapes, U+2028 and U+2029 unescaped). An invalid
// byte is written as U+FFFD.
func AppendJSString(dst []byte, s string) []byte {
	for _, r := range s {
		dst = appendJSRune(dst, r)
	}
	return dst
}

// appendJSRune appends one code point, or one lone surrogate (0xD800 to
// 0xDFFF), as JSON.stringify writes it.
func appendJSRune(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"':
		return append(dst, `\"`...)
	case r == '\\':
		return append(dst, `\\`...)
	case r == '\b':
		return append(dst, `\b`...)
	case r == '\t':
		return append(dst, `\t`...)
	case r == '\n':
		return append(dst, `\n`...)
	case r == '\f':
		return append(dst, `\f`...)
	case r == '\r':
		return append(dst, `\r`...)
	case r < 0x20, r >= 0xD800 && r < 0xE000:
		return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	return utf8.AppendRune(dst, r)
}

// LiteralRune returns the character of the unit of a JSON string
// literal's body that starts at byte i, as JavaScript's Array.from sees
// the string (a surrogate pair, escaped, is one character; a lone
// surrogate escape is one, its value 0xD800 to 0xDFFF; an invalid byte is
// U+FFFD), and the unit's length in bytes. The units are those
// LiteralChars counts.
func LiteralRune(body []byte, i int) (r rune, size int) {
	size, r, _ = literalUnit(body, i)
	switch {
	case r == utf8.RuneError && size == 6:
		if u, ok := hex4(body, i+2); ok {
			r = u // a lone surrogate, or \ufffd itself
		}
	case size == 2 && body[i] == '\\':
		r = unescape(body[i+1])
	}
	return r, size
}

// unescape is the character of a simple escape \c.
func unescape(c byte) rune {
	switch c {
	case 'b':
		return '\b'
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'f':
		return '\f'
	case 'r':
		return '\r'
	case 'u':
		return utf8.RuneError // a \u escape without four hex digits
	}
	return rune(c) // \" \\ \/
}

// AppendJSRune appends one character (as LiteralRune returns it) as
// JSON.stringify escapes it in a string literal's body.
func AppendJSRune(dst []byte, r rune) []byte { return appendJSRune(dst, r) }
