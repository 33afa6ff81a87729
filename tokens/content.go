package tokens

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/gif"  // image sizes of GIF blocks
	_ "image/jpeg" // image sizes of JPEG blocks
	_ "image/png"  // image sizes of PNG blocks
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// The classes of what a model sees of a message.
const (
	// classText is text, tool-call names and arguments, tool output,
	// summaries: everything that is tokenized as written.
	classText = iota
	// classThinking is the text of thinking blocks.
	classThinking
	numClasses
)

// The wrappers pi puts around summaries when it turns them into messages
// (packages/coding-agent/src/core/messages.ts).
const (
	compactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	branchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	summarySuffix    = "\n</summary>"
)

// defaultImageTokens is what an image of unknown size costs: pi's
// estimate of 4,800 characters.
const defaultImageTokens = 1200

// message is what the model sees of one context message, measured, and
// the recorded usage when it is an assistant message.
type message struct {
	line int
	id   string
	// kind is the message role, or "compactionSummary",
	// "branchSummary", "custom".
	kind string
	// toks holds, per base tokenizer, the base count of each class.
	toks [][numClasses]int
	// images is the estimated cost of the message's images in tokens.
	images int
	// ctx is the context size recorded by an assistant message, 0 when it
	// records none; out its output tokens.
	ctx, out int
	// model is an assistant message's provider/model.
	model string
	// skip is true for messages the host does not send to the model
	// (transcript-only assistants, failed turns, bash runs excluded from
	// context).
	skip bool
}

// measure builds the message view of a raw line, counting its classes
// with each base tokenizer. ok is false when the line is not a message
// that can reach the model (a header, a custom state entry, a label).
func measure(raw []byte, line int, bases []Tokenizer) (m message, ok bool) {
	e := entry.Parse(raw, line, 0)
	if e.Kind != bs.KindEntry {
		return m, false
	}
	m = message{line: line, id: e.ID, toks: make([][numClasses]int, len(bases))}
	add := func(class int, b []byte) {
		if len(b) == 0 {
			return
		}
		for i, t := range bases {
			m.toks[i][class] += t.Tokens(b)
		}
	}
	switch e.Type {
	case "compaction", "branch_summary":
		m.kind = "compactionSummary"
		prefix := compactionPrefix
		if e.Type == "branch_summary" {
			m.kind, prefix = "branchSummary", branchPrefix
		}
		s := string(stringOf(e, "/summary"))
		add(classText, []byte(prefix+s+summarySuffix))
		return m, true
	case "custom_message":
		m.kind = "custom"
		visibleStrings(e, "/content", add, &m)
		return m, true
	case "message":
	default:
		return m, false
	}
	m.kind = e.Role
	switch e.Role {
	case "assistant":
		u, _ := RecordedUsage(raw)
		m.model = u.Provider + "/" + u.Model
		if !u.Answered() {
			m.skip = true
		} else {
			m.ctx, m.out = int(u.Context), int(u.Output)
		}
	case "bashExecution":
		if s, end, ok := jsonedit.Find(raw, "/message/excludeFromContext"); ok && string(raw[s:end]) == "true" {
			m.skip = true
		}
	}
	visibleStrings(e, "/message/content", add, &m)
	if e.Role == "bashExecution" {
		add(classText, stringOf(e, "/message/command"))
		add(classText, stringOf(e, "/message/output"))
	}
	return m, true
}

// visibleStrings adds what the model sees of the content at base (a
// string or an array of blocks) of e.
func visibleStrings(e *bs.Entry, base string, add func(int, []byte), m *message) {
	raw := e.Raw
	for _, b := range e.Blocks {
		switch b.Type {
		case "toolCall":
			blk := raw[b.Start:b.End]
			if _, s, end, ok := jsonedit.Member(blk, "", "arguments"); ok {
				add(classText, blk[s:end])
			}
		case "image":
			m.images += defaultImageTokens
		}
	}
	for _, v := range e.Strings {
		field, whole, ok := entry.ContentMember(v.Pointer, base)
		switch {
		case !ok:
			continue
		case whole: // content given as one string
			add(classText, decode(raw[v.Start:v.End]))
			continue
		}
		b, ok := entry.BlockAt(e, v)
		if !ok {
			continue
		}
		switch typ := b.Type; {
		case field == "text" && typ == "text":
			add(classText, decode(raw[v.Start:v.End]))
		case field == "thinking" && typ == "thinking":
			add(classThinking, decode(raw[v.Start:v.End]))
		case field == "name" && typ == "toolCall":
			add(classText, decode(raw[v.Start:v.End]))
		case field == "data" && typ == "image":
			if t, ok := imageTokens(raw[v.Start:v.End]); ok {
				m.images += t - defaultImageTokens
			}
		}
	}
}

// stringOf returns the decoded string value at pointer in e, or nil.
func stringOf(e *bs.Entry, pointer string) []byte {
	for _, v := range e.Strings {
		if v.Pointer == pointer {
			return decode(e.Raw[v.Start:v.End])
		}
	}
	return nil
}

// decode returns the text of a raw JSON string (quotes included): the
// bytes between the quotes when there is no escape, else the unescaped
// bytes (a lone surrogate becomes U+FFFD).
func decode(q []byte) []byte {
	if len(q) < 2 {
		return nil
	}
	in := q[1 : len(q)-1]
	i := bytes.IndexByte(in, '\\')
	if i < 0 {
		return in
	}
	out := make([]byte, 0, len(in))
	for i >= 0 {
		out = append(out, in[:i]...)
		in = in[i:]
		if len(in) < 2 {
			break
		}
		switch c := in[1]; c {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, n := unicodeEscape(in)
			out = utf8.AppendRune(out, r)
			in = in[n:]
			i = bytes.IndexByte(in, '\\')
			continue
		default: // '"', '\\', '/'
			out = append(out, c)
		}
		in = in[2:]
		i = bytes.IndexByte(in, '\\')
	}
	return append(out, in...)
}

// unicodeEscape decodes the \\uXXXX escape (or surrogate pair) at the
// start of in, returning the rune and the bytes it took.
func unicodeEscape(in []byte) (rune, int) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(in)
	if !ok {
		return utf8.RuneError, min(len(in), 2)
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(in[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

// imageTokens estimates what an image block costs from its pixel size,
// as Anthropic counts (width × height / 750, after scaling the long edge
// to at most 1568 pixels). q is the raw JSON string of the base64 data.
func imageTokens(q []byte) (int, bool) {
	in := q
	if len(in) >= 2 {
		in = in[1 : len(in)-1]
	}
	if i := bytes.IndexByte(in, ','); i >= 0 && i < 64 { // a data: URL
		in = in[i+1:]
	}
	const head = 1 << 16
	if len(in) > head {
		in = in[:head]
	}
	in = in[:len(in)/4*4]
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(in)))
	n, err := base64.StdEncoding.Decode(buf, in)
	if err != nil && n == 0 {
		return 0, false
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(buf[:n]))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, false
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if long := max(w, h); long > 1568 {
		w, h = w*1568/long, h*1568/long
	}
	if px := w * h; px > 1.15e6 {
		s := math.Sqrt(1.15e6 / px)
		w, h = w*s, h*s
	}
	return int(w*h/750 + 0.5), true
}
