package agenttools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// PageOf returns the page of the text of sv (its text blocks' texts
// concatenated) that starts at character offset and holds at most
// maxChars characters (agenttext.PageOfLiteral's rules). The text is paged
// on its stored JSON literals, so that a page's Raw holds exactly the
// UTF-16 code units the host wrote, lone surrogates included; offsets
// count the characters of the text. A stored literal that is not a JSON
// string wraps brainsurgeon.ErrCorrupt; an offset or length out of range
// is an error that names the valid ones (and wraps no sentinel).
func PageOf(sv *restore.SourceValue, offset, maxChars int) (*agenttext.Page, error) {
	var body []byte
	for _, lit := range sv.TextLiterals {
		b, err := agenttext.LiteralBody(lit)
		if err != nil {
			return nil, fmt.Errorf("stored content of %s: %v: %w", sv.Key, err, bs.ErrCorrupt)
		}
		body = append(body, b...)
	}
	return agenttext.PageOfLiteral(body, offset, maxChars)
}

// pageValue answers a restore of the content sv (see restoreSource):
// its blocks exactly when its text fits one page from offset 0, else the
// page asked for. more are added to the details.
func pageValue(sv *restore.SourceValue, offset, maxChars int, more map[string]any) (Result, error) {
	res, _, err := pageOrWhole(sv, offset, maxChars, more)
	return res, err
}

// pageOrWhole is pageValue, and says whether the answer is the whole
// content (its text fits one page from offset 0).
func pageOrWhole(sv *restore.SourceValue, offset, maxChars int, more map[string]any) (Result, bool, error) {
	key := sv.Key
	page, err := PageOf(sv, offset, maxChars)
	if errors.Is(err, bs.ErrCorrupt) {
		return Result{}, false, err
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("purge_control restore %s: %w", key, err)
	}
	details := map[string]any{"value_id": key, "bytes": sv.Bytes, "sha256": sv.SHA256, "offset": page.Offset,
		"next_offset": page.NextOffset, "total_chars": page.TotalChars}
	maps.Copy(details, more)
	if offset == 0 && page.Last() {
		blocks, err := SplitTextBlocks(sv.Content, MaxTextBlock)
		if err != nil {
			return Result{}, false, err
		}
		details["blocks"] = len(blocks)
		return Result{OK: true, Content: blocks, Details: details}, true, nil
	}
	blocks := []json.RawMessage{textBlock(agenttext.PageHeader(key, page))}
	if offset == 0 && sv.OtherBlocks > 0 {
		others, err := otherBlocks(sv.Content)
		if err != nil {
			return Result{}, false, err
		}
		blocks = append(blocks, others...)
	}
	blocks = append(blocks, literalTextBlock(page.Raw))
	details["end"], details["page"], details["pages"], details["max_chars"] = page.End, page.Number, page.Pages, page.MaxChars
	return Result{OK: true, Content: blocks, Details: details}, false, nil
}

// literalTextBlock returns a text content block whose "text" is the JSON
// string literal with the given body, as it is.
func literalTextBlock(body []byte) json.RawMessage {
	b := make([]byte, 0, len(body)+len(`{"type":"text","text":""}`))
	b = append(b, `{"type":"text","text":"`...)
	b = append(b, body...)
	return append(b, `"}`...)
}

// otherBlocks returns the blocks of content (a JSON array) that are not
// text blocks, each as its bytes in content.
func otherBlocks(content []byte) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	var out []json.RawMessage
	for _, b := range blocks {
		if _, ok := textLiteral(b); !ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// textLiteral returns the "text" literal of a text block (quotes
// included), or false when b is not a text block.
func textLiteral(b json.RawMessage) (json.RawMessage, bool) {
	var tb struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(b, &tb) != nil || tb.Type != "text" || len(tb.Text) < 2 || tb.Text[0] != '"' {
		return nil, false
	}
	return tb.Text, true
}

// SplitTextBlocks returns the content blocks of content (a JSON array),
// each as its bytes in content, except that a text block whose text is
// longer than max UTF-16 code units is replaced by consecutive text blocks
// of at most max code units each, cut between characters (a surrogate
// pair is never cut), whose texts concatenate to the exact text. The
// blocks are cut on the text's stored JSON literal, so every UTF-16 code
// unit comes back, lone surrogates included.
func SplitTextBlocks(content []byte, max int) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	out := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		lit, ok := textLiteral(b)
		if !ok {
			out = append(out, b)
			continue
		}
		body := lit[1 : len(lit)-1]
		if len(body) <= max || agenttext.LiteralUTF16Len(body) <= max {
			out = append(out, b)
			continue
		}
		for _, part := range agenttext.SplitLiteral(body, max) {
			out = append(out, literalTextBlock(part))
		}
	}
	return out, nil
}

// viewSourceValue returns the content of an entry (a JSON string, or an
// array of content blocks) as a value pageValue answers: a string is one
// text block; blocks of text and images are returned as they are; content
// holding other blocks (thinking, tool calls), which a tool result cannot
// carry, is returned as the text of its JSON.
func viewSourceValue(key string, content json.RawMessage) (*restore.SourceValue, error) {
	c := bytes.TrimSpace(content)
	sum := sha256.Sum256(c)
	sv := &restore.SourceValue{Key: key, Bytes: len(c), SHA256: hex.EncodeToString(sum[:])}
	switch {
	case len(c) > 0 && c[0] == '"':
		sv.Content = literalTextBlock(c[1 : len(c)-1])
		sv.Content = append(append([]byte{'['}, sv.Content...), ']')
		sv.TextLiterals = []json.RawMessage{c}
		return sv, nil
	case len(c) > 0 && c[0] == '[':
		var blocks []struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(c, &blocks); err != nil {
			return nil, fmt.Errorf("the entry's content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
		}
		plain := true
		for _, b := range blocks {
			plain = plain && (b.Type == "text" || b.Type == "image")
		}
		if plain {
			lits, others, err := extract.SourceTextLiterals(c)
			if err != nil {
				return nil, err
			}
			sv.Content, sv.TextLiterals, sv.OtherBlocks = c, lits, others
			return sv, nil
		}
	case len(c) == 0:
		return nil, fmt.Errorf("the entry's content: expected a JSON string or array, found nothing: %w", bs.ErrCorrupt)
	}
	lit, err := json.Marshal(string(c))
	if err != nil {
		return nil, err
	}
	sv.Content = append(append([]byte{'['}, literalTextBlock(lit[1:len(lit)-1])...), ']')
	sv.TextLiterals = []json.RawMessage{lit}
	return sv, nil
}
