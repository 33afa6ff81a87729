package agenttools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

// ReservedDetailsKeys are the members of a tool result's details that
// OpenClaw reads to grade a call; the placeholder details of a result
// stored at the source keep them verbatim, in this order.
var ReservedDetailsKeys = []string{"status", "ok", "success", "error", "timedOut", "exitCode"}

// PlaceholderInput is what the placeholder of a tool result stored at the
// source is built from.
type PlaceholderInput struct {
	// Key is the side key, "tc-<tool call id>".
	Key string
	// Tool is the tool's label, as the text names it.
	Tool string
	// Session names the session for the CLI hint (SourceSession); ""
	// writes "<session>".
	Session string
	// Content and Details are the tool result's content blocks (a JSON
	// array) and details (any JSON value, or absent), as the request
	// carries them.
	Content, Details json.RawMessage
	// PreviewChars is the most characters of head and of tail the text
	// shows; each is also at most a quarter of the text.
	PreviewChars int
	// Bytes and SHA256 are the length and hex sha256 of the stored
	// content bytes, for the details' "brainsurgeon" member.
	Bytes  int
	SHA256 string
}

// BuildPlaceholder builds what stands in for a tool result stored at the
// source, as JSON: the content, one text block (the key, what was stored,
// how to restore it with purge_control and with the CLI, and a head and
// tail preview), and the details, {"brainsurgeon":{"key","bytes","sha256"}}
// followed by the ReservedDetailsKeys the original details (an object)
// hold, with their values. Characters are code points as JavaScript counts
// them (a lone surrogate escape is one); the text is written as
// JSON.stringify writes it, so the plugin gets exactly the text it used to
// build. The error, for content that is not a JSON array, wraps
// brainsurgeon.ErrInvalid.
func BuildPlaceholder(p PlaceholderInput) (content, details json.RawMessage, err error) {
	texts, chars, images, err := textBlocks(p.Content)
	if err != nil {
		return nil, nil, fmt.Errorf("content: expected a JSON array of content blocks: %v: %w", err, bs.ErrInvalid)
	}
	ph := agenttext.SourcePlaceholder{Key: p.Key, Tool: p.Tool, Session: p.Session, Chars: chars, Images: images}
	ph.Preview = min(p.PreviewChars, ph.Chars/4)
	if ph.Preview > 0 {
		ph.Head, ph.Tail = headTail(texts, ph.Chars+len(texts)-1, ph.Preview)
	}
	content = append([]byte(`[{"type":"text","text":"`), ph.AppendBody(nil)...)
	content = append(content, `"}]`...)

	d := []byte(`{"brainsurgeon":{"key":"`)
	d = agenttext.AppendJSString(d, p.Key)
	d = append(d, `","bytes":`...)
	d = strconv.AppendInt(d, int64(p.Bytes), 10)
	d = append(d, `,"sha256":"`...)
	d = agenttext.AppendJSString(d, p.SHA256)
	d = append(d, `"}`...)
	if t := bytes.TrimSpace(p.Details); len(t) > 0 && t[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t, &m); err == nil {
			for _, k := range ReservedDetailsKeys {
				v, ok := m[k]
				if !ok {
					continue
				}
				d = append(d, `,"`...)
				d = append(append(d, k...), `":`...)
				d = append(d, compactJSON(v)...)
			}
		}
	}
	return content, append(d, '}'), nil
}

// headTail returns the first and the last n characters of the texts
// (literal bodies) joined with "\n", which hold total characters, as
// literal bodies escaped as JSON.stringify escapes.
func headTail(texts [][]byte, total, n int) (head, tail []byte) {
	k := 0 // the index of the next character
	add := func(r rune) {
		if k < n {
			head = agenttext.AppendJSRune(head, r)
		}
		if k >= total-n {
			tail = agenttext.AppendJSRune(tail, r)
		}
		k++
	}
	for i, body := range texts {
		if i > 0 {
			add('\n')
		}
		if k >= n {
			if c := agenttext.LiteralChars(body); k+c <= total-n {
				k += c // neither in the head nor in the tail
				continue
			}
		}
		for j := 0; j < len(body); {
			r, size := agenttext.LiteralRune(body, j)
			add(r)
			j += size
		}
	}
	return head, tail
}

// textBlocks reads content, a JSON array, in one pass: the literal
// bodies (escapes as written, quotes left out) of its text blocks' string
// "text" members, their length in characters (agenttext.LiteralChars),
// and how many image blocks it holds. An element that is not an object
// counts for nothing; of a member named twice the last counts, as in
// JSON.parse.
func textBlocks(content []byte) (texts [][]byte, chars, images int, err error) {
	dec := jsontext.NewDecoder(bytes.NewReader(content), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		if err == nil {
			err = fmt.Errorf("found a JSON %s", tok.Kind())
		}
		return nil, 0, 0, err
	}
	for dec.PeekKind() != ']' {
		if dec.PeekKind() != '{' {
			if err := dec.SkipValue(); err != nil {
				return nil, 0, 0, err
			}
			continue
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, 0, 0, err
		}
		var typ string
		var text []byte
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, 0, 0, err
			}
			name := tok.String() // the token is void after the next read
			v, err := dec.ReadValue()
			if err != nil {
				return nil, 0, 0, err
			}
			switch name {
			case "type":
				typ = ""
				if v.Kind() == '"' {
					var s string
					if json.Unmarshal(v, &s) == nil {
						typ = s
					}
				}
			case "text":
				text = nil
				if v.Kind() == '"' {
					text = bytes.Clone(v[1 : len(v)-1])
				}
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, 0, 0, err
		}
		switch typ {
		case "text":
			if text != nil {
				texts = append(texts, text)
				chars += agenttext.LiteralChars(text)
			}
		case "image":
			images++
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, 0, 0, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, 0, 0, fmt.Errorf("found more after the array")
	}
	return texts, chars, images, nil
}

// SourceSession names a session for the CLI hint of a source placeholder
// (`brainsurgeon restore <session> <key>`) from the host's identity of the
// run: "<agent>/<sessionId>" when the host named the session id (the agent
// from agentID, else from the session key, else "main"), else the session
// key, else "<session>" (agenttext.SourceUnknownSession).
func SourceSession(agentID, sessionID, sessionKey string) string {
	if sessionID != "" {
		if agentID == "" {
			agentID = agentOfKey(sessionKey)
		}
		return agentID + "/" + sessionID
	}
	if sessionKey == "" {
		return agenttext.SourceUnknownSession
	}
	return sessionKey
}

// agentOfKey is the agent of a session key "agent:<id>:…", else "main".
func agentOfKey(sessionKey string) string {
	parts := strings.Split(sessionKey, ":")
	if len(parts) >= 3 && parts[0] == "agent" && parts[1] != "" {
		return parts[1]
	}
	return "main"
}
