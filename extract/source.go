package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// SourceKeyPrefix starts the side key of a tool result stored at the
// source, before any entry holds it: "tc-<toolCallId>". Such a record is
// an extracted value like any other; its placeholder is
// "[[extracted-tc-<toolCallId>]]", held by the toolResult entry of that
// tool call.
const SourceKeyPrefix = "tc-"

// Paths of the values of a source record: the tool result's content
// blocks and its details.
const (
	SourceContentPath = "/message/content"
	SourceDetailsPath = "/message/details"
)

// SourceKeyForbidden are the bytes a tool call id may not hold although a
// side key may: "[" and "]" would end or confuse the placeholder
// "[[extracted-tc-<id>]]" (a reader stops at the first "]]"), and '"',
// '<', '>' and '&' are escaped by some JSON encoders, so the placeholder
// would not appear verbatim in the transcript's line.
const SourceKeyForbidden = "[]\"<>&"

// SourceKey returns the side key of the result of tool call toolCallID,
// "tc-<toolCallID>", after checking it with brainsurgeon.CheckSideKey and
// refusing the bytes of SourceKeyForbidden (the error wraps ErrInvalid
// and says what was expected and found).
func SourceKey(toolCallID string) (string, error) {
	if toolCallID == "" {
		return "", fmt.Errorf("tool call id: expected 1 to %d bytes of printable ASCII other than space, '/', '\\' and %s, found an empty id: %w",
			bs.MaxSideKeyLen-len(SourceKeyPrefix), SourceKeyForbidden, bs.ErrInvalid)
	}
	key := SourceKeyPrefix + toolCallID
	if err := bs.CheckSideKey(key); err != nil {
		return "", fmt.Errorf("tool call id %.60q makes an invalid side key: %w", toolCallID, err)
	}
	if i := strings.IndexAny(toolCallID, SourceKeyForbidden); i >= 0 {
		return "", fmt.Errorf("tool call id %.60q: byte %q not allowed (expected none of %s, which would break the placeholder %s): %w",
			toolCallID, toolCallID[i], SourceKeyForbidden, Placeholder(key), bs.ErrInvalid)
	}
	return key, nil
}

// IsSourceKey reports whether key is the side key of a tool result stored
// at the source ("tc-…").
func IsSourceKey(key string) bool {
	return len(key) > len(SourceKeyPrefix) && key[:len(SourceKeyPrefix)] == SourceKeyPrefix
}

// ToolCallID returns the "message.toolCallId" member of a toolResult
// entry, or "" for any other entry.
func ToolCallID(e *bs.Entry) string {
	if e == nil || e.Role != "toolResult" {
		return ""
	}
	s, end, ok := jsonedit.Find(e.Raw, "/message/toolCallId")
	if !ok {
		return ""
	}
	id, ok := decodeString(e.Raw[s:end])
	if !ok {
		return ""
	}
	return id
}

// OwnKeys returns the side keys whose placeholders belong to entry e: its
// id and, for a toolResult entry whose tool call id makes a valid side
// key, "tc-<toolCallId>". Everything that asks whether a placeholder names
// its own entry asks through OwnKeys (or HoldsOwnPlaceholder).
func OwnKeys(e *bs.Entry) []string {
	var keys []string
	if e == nil {
		return nil
	}
	if e.ID != "" {
		keys = append(keys, e.ID)
	}
	if id := ToolCallID(e); id != "" {
		if k, err := SourceKey(id); err == nil && k != e.ID {
			keys = append(keys, k)
		}
	}
	return keys
}

// SourceKeyOf returns the "tc-<toolCallId>" key of entry e, or "" when e
// is not a toolResult entry with a valid tool call id. It reads the entry
// only when its line holds a placeholder of a source key, so it is cheap
// for every other entry.
func SourceKeyOf(e *bs.Entry) string {
	if e == nil || e.Role != "toolResult" || !bytes.Contains(e.Raw, []byte(PlaceholderPrefix+SourceKeyPrefix)) {
		return ""
	}
	if id := ToolCallID(e); id != "" {
		if k, err := SourceKey(id); err == nil {
			return k
		}
	}
	return ""
}

// HoldsOwnPlaceholder reports whether raw (a value of entry e, or its
// whole line) holds the placeholder of one of e's own keys (OwnKeys).
func HoldsOwnPlaceholder(raw []byte, e *bs.Entry) bool {
	if e == nil {
		return false
	}
	if IsPlaceholderValue(raw, e.ID) {
		return true
	}
	if !bytes.Contains(raw, []byte(PlaceholderPrefix+SourceKeyPrefix)) {
		return false
	}
	for _, k := range OwnKeys(e) {
		if k != e.ID && IsPlaceholderValue(raw, k) {
			return true
		}
	}
	return false
}

// SourceContent returns the content blocks of a source record (key
// "tc-…"): the bytes of its SourceContentPath value exactly as the
// plugin sent them, after checking their hash. A record without that
// value is an error wrapping brainsurgeon.ErrNotFound; a hash mismatch
// wraps brainsurgeon.ErrCorrupt.
func SourceContent(rec *Record) ([]byte, error) {
	v, ok := rec.Value(SourceContentPath)
	if !ok {
		return nil, fmt.Errorf("side record %s: expected a %s value (a tool result stored at the source), found values %v: %w",
			rec.EntryID, SourceContentPath, valuePaths(rec), bs.ErrNotFound)
	}
	return v.Bytes()
}

// SourceDetails returns the details of a source record exactly as the
// plugin sent them, or nil when none were stored.
func SourceDetails(rec *Record) ([]byte, error) {
	v, ok := rec.Value(SourceDetailsPath)
	if !ok {
		return nil, nil
	}
	return v.Bytes()
}

func valuePaths(rec *Record) []string {
	out := make([]string, len(rec.Values))
	for i, v := range rec.Values {
		out[i] = v.Path
	}
	return out
}

// SourceText returns the texts of the text blocks of content (a JSON
// array of content blocks), in order, and the number of other blocks
// (images). Content that is not an array of objects is an error wrapping
// brainsurgeon.ErrCorrupt.
func SourceText(content []byte) (texts []string, others int, err error) {
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, 0, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	for _, b := range blocks {
		if b.Type == "text" && b.Text != nil {
			texts = append(texts, *b.Text)
		} else {
			others++
		}
	}
	return texts, others, nil
}

// SourceTextLiterals returns the "text" members of the text blocks of
// content (a JSON array of content blocks), in order, each as its JSON
// string literal exactly as it appears in content (quotes included), and
// the number of other blocks. The literals keep what a Go string cannot
// (a lone surrogate escape). Content that is not an array of objects is
// an error wrapping brainsurgeon.ErrCorrupt.
func SourceTextLiterals(content []byte) (lits []json.RawMessage, others int, err error) {
	var blocks []struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, 0, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	for _, b := range blocks {
		if b.Type == "text" && len(b.Text) > 0 && b.Text[0] == '"' {
			lits = append(lits, b.Text)
		} else {
			others++
		}
	}
	return lits, others, nil
}
